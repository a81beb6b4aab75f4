// einsum's computation (torch.einsum's plan, aten/src/ATen/native/Linear.cpp): diagonals of repeated
// labels, then a left-to-right contraction of the operands two at a time, each pair one bmm.
#include <algorithm>

#include "runtime/einsum_equation.h"
#include "runtime/functional.h"

namespace ember {
namespace {

// A tensor with one label per dim, all distinct once diagonals are taken.
struct Term {
  Tensor tensor;
  std::vector<int> labels;
};

int position_of(const std::vector<int>& labels, int label) {
  const auto found = std::find(labels.begin(), labels.end(), label);
  return found == labels.end() ? -1 : static_cast<int>(found - labels.begin());
}

bool contains(const std::vector<int>& labels, int label) { return position_of(labels, label) != -1; }

// Replaces each pair of dims with one label by their diagonal. The pair is moved last and flattened
// to n * n elements, of which every (n + 1)-th is on the diagonal: a strided slice, a view when the
// pair was already laid out together, whose gradient scatters back to the diagonal alone. (Masking
// with an eye and summing would multiply all n * n elements, and make an inf off the diagonal a NaN.)
Term take_diagonals(Term term) {
  for (int second = 1; second < static_cast<int>(term.labels.size()); ++second) {
    const int first = position_of(term.labels, term.labels[second]);
    if (first == second) continue;
    const int64_t size = term.tensor.sizes()[first];
    Dims order;
    Dims shape;
    std::vector<int> labels;
    for (int d = 0; d < static_cast<int>(term.labels.size()); ++d) {
      if (d == first || d == second) continue;
      order.push_back(d);
      shape.push_back(term.tensor.sizes()[d]);
      labels.push_back(term.labels[d]);
    }
    order.push_back(first);
    order.push_back(second);
    shape.push_back(size * size);
    labels.push_back(term.labels[first]);
    const Tensor flat = term.tensor.permute(order).reshape(shape);
    term = {flat.slice(-1, 0, size * size, size + 1), labels};
    second = 0;  // the labels moved: look again from the start
  }
  return term;
}

// Sums out `dims` of the term (sum over no dims would sum them all).
Term sum_out(Term term, const std::vector<int>& dims) {
  if (dims.empty()) return term;
  Dims reduced;
  std::vector<int> kept;
  for (int d = 0; d < static_cast<int>(term.labels.size()); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      kept.push_back(term.labels[d]);
    } else {
      reduced.push_back(d);
    }
  }
  return {term.tensor.sum(reduced), kept};
}

// Drops the size-1 dims of `term` whose label `other` holds with another size: the term is constant
// along that index, so it broadcasts there, and the index becomes the other term's alone.
Term drop_broadcast_dims(Term term, const Term& other) {
  for (int d = static_cast<int>(term.labels.size()) - 1; d >= 0; --d) {
    const int in_other = position_of(other.labels, term.labels[d]);
    if (term.tensor.sizes()[d] == 1 && in_other != -1 && other.tensor.sizes()[in_other] != 1) {
      term.tensor = term.tensor.squeeze(d);
      term.labels.erase(term.labels.begin() + d);
    }
  }
  return term;
}

// Sums out the labels of `term` that neither `other` nor anything later (`needed`) holds.
Term sum_private_labels(Term term, const Term& other, const std::vector<int>& needed) {
  std::vector<int> dims;
  for (int d = 0; d < static_cast<int>(term.labels.size()); ++d) {
    if (!contains(other.labels, term.labels[d]) && !contains(needed, term.labels[d])) dims.push_back(d);
  }
  return sum_out(std::move(term), dims);
}

// Appends the dims of `term` holding `labels` to `order` (and their sizes to `shape`, if given);
// returns the product of those sizes.
int64_t append_dims(const Term& term, const std::vector<int>& labels, Dims& order, Dims* shape) {
  int64_t product = 1;
  for (const int label : labels) {
    const int d = position_of(term.labels, label);
    order.push_back(d);
    if (shape != nullptr) shape->push_back(term.tensor.sizes()[d]);
    product *= term.tensor.sizes()[d];
  }
  return product;
}

// left * right summed over the labels they share and `needed` lacks, as one bmm of
// [batch, left-only, summed] by [batch, summed, right-only]; the result's labels are batch,
// left-only, right-only. With nothing summed, a broadcast mul of [B, M, 1] and [B, 1, N] does.
Term contract(Term left, Term right, const std::vector<int>& needed) {
  left = drop_broadcast_dims(std::move(left), right);
  right = drop_broadcast_dims(std::move(right), left);
  left = sum_private_labels(std::move(left), right, needed);
  right = sum_private_labels(std::move(right), left, needed);
  std::vector<int> batch, summed, left_only, right_only;
  for (const int label : left.labels) {
    if (!contains(right.labels, label)) {
      left_only.push_back(label);
    } else if (contains(needed, label)) {
      batch.push_back(label);
    } else {
      summed.push_back(label);
    }
  }
  for (const int label : right.labels) {
    if (!contains(left.labels, label)) right_only.push_back(label);
  }
  Dims left_order, right_order, result_shape;
  const int64_t batch_size = append_dims(left, batch, left_order, &result_shape);
  const int64_t rows = append_dims(left, left_only, left_order, &result_shape);
  const int64_t inner = append_dims(left, summed, left_order, nullptr);
  append_dims(right, batch, right_order, nullptr);
  append_dims(right, summed, right_order, nullptr);
  const int64_t columns = append_dims(right, right_only, right_order, &result_shape);
  const Tensor a = left.tensor.permute(left_order).reshape({batch_size, rows, inner});
  const Tensor b = right.tensor.permute(right_order).reshape({batch_size, inner, columns});
  const Tensor product = summed.empty() ? mul(a, b) : bmm(a, b);  // inner is 1 when nothing is summed
  std::vector<int> labels = batch;
  labels.insert(labels.end(), left_only.begin(), left_only.end());
  labels.insert(labels.end(), right_only.begin(), right_only.end());
  return {product.reshape(result_shape), labels};
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands, Where where) {
  CallSiteScope site(where);
  const detail::EinsumEquation parsed = detail::parse_einsum(equation, operands);
  for (size_t k = 1; k < operands.size(); ++k) {
    check(operands[k].dtype() == operands[0].dtype(),
          "einsum: operand {} has dtype {} but operand 0 has {} (equation '{}'): the operands must share one dtype", k,
          operands[k].dtype(), operands[0].dtype(), equation);
  }
  const int count = static_cast<int>(operands.size());
  std::vector<Term> terms;
  for (int k = 0; k < count; ++k) terms.push_back(take_diagonals({operands[k], parsed.operand_labels[k]}));

  Term result = terms[0];
  for (int k = 1; k < count; ++k) {
    // What later steps still need: the output's labels and those of the operands not yet taken.
    std::vector<int> needed = parsed.output_labels;
    for (int later = k + 1; later < count; ++later) {
      needed.insert(needed.end(), terms[later].labels.begin(), terms[later].labels.end());
    }
    result = contract(std::move(result), terms[k], needed);
  }
  std::vector<int> unused;
  for (int d = 0; d < static_cast<int>(result.labels.size()); ++d) {
    if (!contains(parsed.output_labels, result.labels[d])) unused.push_back(d);
  }
  result = sum_out(std::move(result), unused);
  Dims order;
  for (const int label : parsed.output_labels) order.push_back(position_of(result.labels, label));
  return result.tensor.permute(order);
}

}  // namespace ember
