// Conformance cases for the registered gradient ops that backward rules dispatch:
// softmax_backward, log_softmax_backward, cross_entropy_backward, nll_loss_backward and
// extremum_backward. (layer_norm_backward and embedding_backward sit with their forward ops.)
// Their formulas are checked directly here; the forward ops' finite-difference checks cover them
// again end to end.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_gradient_ops {
namespace {

using enum Layout;
constexpr int64_t kNone = 0, kMean = 1, kSum = 2;  // ember::Reduction values

// Applies fn(grad slice, output slice) to every pair of 1-D slices along `dim`.
RefTensor along_pair(const RefTensor& grad, const RefTensor& output, int64_t dim_attr,
                     const std::function<std::vector<double>(const std::vector<double>&, const std::vector<double>&)>& fn) {
  RefTensor out = filled(grad.sizes, 0.0);
  if (grad.sizes.size() == 0) {
    out.values = fn(grad.values, output.values);
    return out;
  }
  const int dim = wrap(dim_attr, grad.sizes.size());
  for (int64_t i = 0; i < grad.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, grad.sizes);
    if (index[dim] != 0) continue;
    std::vector<double> g, y;
    for (int64_t k = 0; k < grad.sizes[dim]; ++k) {
      index[dim] = k;
      g.push_back(grad.values[ravel(index, grad.sizes)]);
      y.push_back(output.values[ravel(index, grad.sizes)]);
    }
    const std::vector<double> result = fn(g, y);
    for (int64_t k = 0; k < grad.sizes[dim]; ++k) {
      index[dim] = k;
      out.values[ravel(index, grad.sizes)] = result[k];
    }
  }
  return out;
}

// softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g).
std::vector<double> softmax_grad(const std::vector<double>& g, const std::vector<double>& y) {
  double dot = 0.0;
  for (size_t k = 0; k < g.size(); ++k) dot += g[k] * y[k];
  std::vector<double> dx;
  for (size_t k = 0; k < g.size(); ++k) dx.push_back(y[k] * (g[k] - dot));
  return dx;
}
std::vector<double> log_softmax_grad(const std::vector<double>& g, const std::vector<double>& y) {
  const double total = sum_of(g);
  std::vector<double> dx;
  for (size_t k = 0; k < g.size(); ++k) dx.push_back(g[k] - std::exp(y[k]) * total);
  return dx;
}

// Inputs grad (the loss's shape), scores [N, C] or [C], target; the gradient of the loss with
// respect to the scores. from_logits: cross_entropy (softmax with label smoothing), else nll_loss.
std::vector<RefTensor> class_loss_grad(const std::vector<RefTensor>& in, const Attrs& attrs, bool from_logits) {
  const RefTensor &grad = in[0], &scores = in[1], &target = in[2];
  const bool batched = scores.sizes.size() == 2;
  const int64_t n = batched ? scores.sizes[0] : 1, classes = scores.sizes[batched ? 1 : 0];
  const int64_t reduction = attrs.get<int64_t>("reduction"), ignore = attrs.get<int64_t>("ignore_index");
  const double smoothing = from_logits ? attrs.get<double>("label_smoothing") : 0.0;
  double counted = 0.0;
  for (double t : target.values) counted += static_cast<int64_t>(t) != ignore ? 1.0 : 0.0;
  RefTensor out = filled(scores.sizes, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const auto t = static_cast<int64_t>(target.values[i]);
    if (t == ignore) continue;
    const double scale = reduction == kNone ? grad.values[i] : grad.values[0] / (reduction == kMean ? counted : 1.0);
    const auto row = scores.values.begin() + i * classes;
    double peak = row[0], total = 0.0;
    for (int64_t c = 0; c < classes; ++c) peak = std::max(peak, row[c]);
    for (int64_t c = 0; c < classes; ++c) total += std::exp(row[c] - peak);
    for (int64_t c = 0; c < classes; ++c) {
      const double wanted = (c == t ? 1.0 - smoothing : 0.0) + smoothing / static_cast<double>(classes);
      const double d = from_logits ? std::exp(row[c] - peak) / total - wanted : -(c == t ? 1.0 : 0.0);
      out.values[i * classes + c] = scale * d;
    }
  }
  return {out};
}

// Inputs grad (reduced shape), input, result: each group's gradient is split evenly among the
// elements equal to its extremum (ties share it, like PyTorch's amax).
std::vector<RefTensor> extremum_grad(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor &grad = in[0], &input = in[1], &result = in[2];
  const Dims& dims = attrs.get<Dims>("dims");
  std::vector<bool> reduced(static_cast<size_t>(input.sizes.size()), dims.empty());
  for (int64_t dim : dims) reduced[wrap(dim, input.sizes.size())] = true;
  Dims kept;
  for (int d = 0; d < input.sizes.size(); ++d) kept.push_back(reduced[d] ? 1 : input.sizes[d]);
  auto group = [&](int64_t i) {
    std::vector<int64_t> index = unravel(i, input.sizes);
    for (int d = 0; d < input.sizes.size(); ++d)
      if (reduced[d]) index[d] = 0;
    return ravel(index, kept);  // the same flat order as the reduced result, with or without keepdim
  };
  std::vector<double> ties(static_cast<size_t>(kept.product()), 0.0);
  for (int64_t i = 0; i < input.numel(); ++i) ties[group(i)] += input.values[i] == result.values[group(i)];
  RefTensor out = filled(input.sizes, 0.0);
  for (int64_t i = 0; i < input.numel(); ++i)
    if (input.values[i] == result.values[group(i)]) out.values[i] = grad.values[group(i)] / ties[group(i)];
  return {out};
}

Case gradient_case(const char* op, const std::string& label, std::vector<InputSpec> inputs, Attrs attrs,
                   Reference reference) {
  Case c{.op = op, .label = label, .inputs = std::move(inputs), .attrs = attrs, .reference = std::move(reference),
         .float32 = {1e-5, 1e-6}};
  return with_half(c, 2e-2);
}

std::vector<Case> gradient_op_cases() {
  const Domain d = real();
  std::vector<Case> cases;
  struct SoftmaxShape {
    const char* label;
    Dims sizes;
    int64_t dim;
    Layout layout = Contiguous;
  };
  const SoftmaxShape softmax_shapes[] = {
      {"[3,4,5] dim -1", {3, 4, 5}, -1}, {"[3,4,5] dim 1", {3, 4, 5}, 1},
      {"transposed [4,5] dim 1", {4, 5}, 1, Transposed}, {"strided [2,3,4] dim 0", {2, 3, 4}, 0, Strided},
      {"size-0 [0,3] dim 1", {0, 3}, 1}, {"0-d", {}, 0}, {"large [131,257] dim 1 (parallel path)", {131, 257}, 1},
  };
  for (const SoftmaxShape& shape : softmax_shapes) {
    const Attrs attrs{{"dim", shape.dim}};
    // The backward ops have backward rules (create_graph), so their gradients are checked too;
    // not on the large shape, which is there for the parallel path's values: a float64 loss summed
    // over 33,667 outputs of magnitude ~10 loses ~1e-7 to rounding in its central differences,
    // above the gradient tolerance. The other shapes check the same formulas.
    const bool gradcheck = shape.sizes.product() < 10000;
    // Any output values define the formulas; these resemble real softmax / log_softmax outputs.
    cases.push_back(gradient_case("softmax_backward", shape.label,
                                  {{shape.sizes, d, shape.layout}, {shape.sizes, real(0.01, 1.0), shape.layout}}, attrs,
                                  [](const std::vector<RefTensor>& in, const Attrs& attrs) {
                                    return std::vector<RefTensor>{along_pair(in[0], in[1], attrs.get<int64_t>("dim"), softmax_grad)};
                                  }));
    cases.back().gradcheck = gradcheck;
    cases.push_back(gradient_case("log_softmax_backward", shape.label,
                                  {{shape.sizes, d, shape.layout}, {shape.sizes, real(-4.0, -0.01), shape.layout}}, attrs,
                                  [](const std::vector<RefTensor>& in, const Attrs& attrs) {
                                    return std::vector<RefTensor>{along_pair(in[0], in[1], attrs.get<int64_t>("dim"), log_softmax_grad)};
                                  }));
    cases.back().gradcheck = gradcheck;
  }

  struct LossShape {
    const char* label;
    Dims scores;
    int64_t reduction;
    int64_t ignore_index = -100;
    double label_smoothing = 0.0;
    Layout layout = Contiguous;
  };
  const LossShape loss_shapes[] = {
      {"[4,5] mean", {4, 5}, kMean},
      {"[4,5] sum", {4, 5}, kSum},
      {"[4,5] none", {4, 5}, kNone},
      {"[6,5] ignore_index 1, mean", {6, 5}, kMean, 1},
      {"[6,5] label smoothing 0.2, ignore_index 2, none", {6, 5}, kNone, 2, 0.2},
      {"transposed [4,5] sum", {4, 5}, kSum, -100, 0.1, Transposed},
      {"1-D scores [5] with a 0-d target", {5}, kMean},
      {"size-0 batch [0,5] none", {0, 5}, kNone},
  };
  for (const LossShape& shape : loss_shapes) {
    const bool batched = shape.scores.size() == 2;
    const Dims target_sizes = batched ? Dims{shape.scores[0]} : Dims{};
    const Dims grad_sizes = shape.reduction == kNone ? target_sizes : Dims{};
    const InputSpec target{target_sizes, indices(0, shape.scores[shape.scores.size() - 1])};
    Attrs attrs{{"reduction", shape.reduction}, {"ignore_index", shape.ignore_index}};
    cases.push_back(gradient_case("nll_loss_backward", shape.label,
                                  {{grad_sizes, d}, {shape.scores, real(-4, -0.05), shape.layout}, target}, attrs,
                                  [](const std::vector<RefTensor>& in, const Attrs& attrs) { return class_loss_grad(in, attrs, false); }));
    attrs.set("label_smoothing", shape.label_smoothing);
    cases.push_back(gradient_case("cross_entropy_backward", shape.label,
                                  {{grad_sizes, d}, {shape.scores, real(-3, 3), shape.layout}, target}, attrs,
                                  [](const std::vector<RefTensor>& in, const Attrs& attrs) { return class_loss_grad(in, attrs, true); }));
  }

  struct ExtremumShape {
    const char* label;
    InputSpec input;
    Dims dims;
    bool keepdim;
    bool maximum;
  };
  const ExtremumShape extremum_shapes[] = {
      {"[3,4,5] dim 1, ties, max", {{3, 4, 5}, integers(-2, 3)}, {1}, false, true},
      {"[3,4,5] all dims, ties, min", {{3, 4, 5}, integers(-2, 3)}, {}, false, false},
      {"[3,4,5] dims 0,2 keepdim, max", {{3, 4, 5}, distinct()}, {0, 2}, true, true},
      {"transposed [4,5] dim 0, ties, min", {{4, 5}, integers(-1, 2), Transposed}, {0}, false, false},
      {"strided [2,3,4] dim -1, max", {{2, 3, 4}, distinct(), Strided}, {-1}, false, true},
      {"0-d", {{}, d}, {}, false, true},
      {"large [131,257] dim 1 (parallel path)", {{131, 257}, integers(-20, 20)}, {1}, false, true},
  };
  for (const ExtremumShape& shape : extremum_shapes) {
    const RefTensor probe = filled(shape.input.sizes, 0.0);
    const Dims grad_sizes = reduce(probe, shape.dims, shape.keepdim, sum_of).sizes;
    InputSpec result{grad_sizes, d};
    result.derive = [shape](const std::vector<RefTensor>& earlier) {
      return reduce(earlier[1], shape.dims, shape.keepdim, shape.maximum ? max_of : min_of).values;
    };
    cases.push_back(gradient_case("extremum_backward", shape.label, {{grad_sizes, d}, shape.input, result},
                                  {{"dims", shape.dims}, {"keepdim", shape.keepdim}}, extremum_grad));
  }
  return cases;
}

const CaseRegistration registration("gradient ops", gradient_op_cases);

TEST_CASE("conformance: registered gradient ops match their float64 formulas") { run_cases(gradient_op_cases()); }

}  // namespace
}  // namespace conformance::cases_gradient_ops
