// Conformance cases for the scatter-adds behind the gathers' gradients: embedding_backward,
// index_add and scatter_add. Indices repeat, so contributions to one slot must be summed.
#include <doctest/doctest.h>

#include "reference.h"

namespace conformance::cases_scatter {
namespace {

using enum Layout;

// embedding_backward(grad [*indices, D], indices; num_weights) -> [num_weights, D]: row
// indices[i] accumulates grad row i.
std::vector<RefTensor> embedding_backward_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& grad = in[0];
  const RefTensor& index = in[1];
  const int64_t width = grad.sizes[grad.sizes.size() - 1];
  RefTensor out = filled({attrs.get<int64_t>("num_weights"), width}, 0.0);
  for (int64_t i = 0; i < index.numel(); ++i)
    for (int64_t j = 0; j < width; ++j)
      out.values[static_cast<int64_t>(index.values[i]) * width + j] += grad.values[i * width + j];
  return {out};
}

// index_add(self, index, source; dim): self with source's slice i added at slice index[i].
std::vector<RefTensor> index_add_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor &self = in[0], &index = in[1], &source = in[2];
  RefTensor out = self;
  if (self.sizes.size() == 0) {
    out.values[0] += source.values[0];
    return {out};
  }
  const int dim = wrap(attrs.get<int64_t>("dim"), self.sizes.size());
  for (int64_t i = 0; i < source.numel(); ++i) {
    std::vector<int64_t> position = unravel(i, source.sizes);
    position[dim] = static_cast<int64_t>(index.values[position[dim]]);
    out.values[ravel(position, self.sizes)] += source.values[i];
  }
  return {out};
}

// scatter_add(self, index, src; dim): for every position p of index, self at p with
// p[dim] = index[p] gains src[p].
std::vector<RefTensor> scatter_add_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor &self = in[0], &index = in[1], &source = in[2];
  RefTensor out = self;
  const int dim = wrap(attrs.get<int64_t>("dim"), self.sizes.size());
  for (int64_t i = 0; i < index.numel(); ++i) {
    std::vector<int64_t> position = unravel(i, index.sizes);
    const double value = source.values[ravel(position, source.sizes)];
    if (self.sizes.size() > 0) position[dim] = static_cast<int64_t>(index.values[i]);
    out.values[ravel(position, self.sizes)] += value;
  }
  return {out};
}

Case scatter_case(const char* op, const char* label, std::vector<InputSpec> inputs, Attrs attrs, Reference reference,
                  bool gradcheck = true) {
  // Sums of a few terms: float32 and float64 are exact to rounding.
  Case c{.op = op, .label = label, .inputs = std::move(inputs), .attrs = attrs, .reference = std::move(reference),
         .gradcheck = gradcheck};
  return with_half(c, 2e-2);
}

std::vector<Case> scatter_cases() {
  const Domain d = real();
  std::vector<Case> cases;
  const auto weights = [](int64_t count) { return Attrs{{"num_weights", count}}; };
  cases.push_back(scatter_case("embedding_backward", "grad [4,3], indices [4] with repeats",
                               {{{4, 3}, d}, {{4}, indices(0, 3)}}, weights(5), embedding_backward_reference));
  cases.push_back(scatter_case("embedding_backward", "grad [2,5,3], indices [2,5]",
                               {{{2, 5, 3}, d}, {{2, 5}, indices(0, 6)}}, weights(6), embedding_backward_reference));
  cases.push_back(scatter_case("embedding_backward", "transposed grad, strided indices",
                               {{{6, 3}, d, Transposed}, {{6}, indices(0, 4), Strided}}, weights(4),
                               embedding_backward_reference));
  cases.push_back(scatter_case("embedding_backward", "0-d index", {{{3}, d}, {{}, indices(0, 4)}}, weights(4),
                               embedding_backward_reference));
  cases.push_back(scatter_case("embedding_backward", "size-0 indices", {{{0, 3}, d}, {{0}, indices(0, 4)}}, weights(4),
                               embedding_backward_reference));
  cases.push_back(scatter_case("embedding_backward", "large 2048 indices into [1000,64] (parallel path)",
                               {{{2048, 64}, d}, {{2048}, indices(0, 1000)}}, weights(1000), embedding_backward_reference,
                               false));

  const auto dim = [](int64_t value) { return Attrs{{"dim", value}}; };
  cases.push_back(scatter_case("index_add", "[5,3] dim 0, repeated index",
                               {{{5, 3}, d}, {{4}, indices(0, 2)}, {{4, 3}, d}}, dim(0), index_add_reference));
  cases.push_back(scatter_case("index_add", "[3,5] dim -1",
                               {{{3, 5}, d}, {{6}, indices(0, 5)}, {{3, 6}, d}}, dim(-1), index_add_reference));
  cases.push_back(scatter_case("index_add", "transposed self, strided source",
                               {{{4, 5}, d, Transposed}, {{3}, indices(0, 4)}, {{3, 5}, d, Strided}}, dim(0),
                               index_add_reference));
  cases.push_back(scatter_case("index_add", "empty index", {{{4, 3}, d}, {{0}, indices(0, 4)}, {{0, 3}, d}}, dim(0),
                               index_add_reference));
  cases.push_back(scatter_case("index_add", "0-d self", {{{}, d}, {{1}, indices(0, 1)}, {{1}, d}}, dim(0),
                               index_add_reference));

  cases.push_back(scatter_case("scatter_add", "[4,3] dim 0 with repeats",
                               {{{4, 3}, d}, {{5, 3}, indices(0, 2)}, {{5, 3}, d}}, dim(0), scatter_add_reference));
  cases.push_back(scatter_case("scatter_add", "[3,5] dim 1, index smaller than src",
                               {{{3, 5}, d}, {{2, 3}, indices(0, 5)}, {{3, 4}, d}}, dim(1), scatter_add_reference));
  cases.push_back(scatter_case("scatter_add", "transposed self, strided index and src",
                               {{{4, 5}, d, Transposed}, {{3, 5}, indices(0, 4), Strided}, {{3, 5}, d, Strided}}, dim(0),
                               scatter_add_reference));
  cases.push_back(scatter_case("scatter_add", "size-0 index",
                               {{{4, 3}, d}, {{0, 3}, indices(0, 4)}, {{0, 3}, d}}, dim(0), scatter_add_reference));
  cases.push_back(scatter_case("scatter_add", "[2,3,4] dim -1",
                               {{{2, 3, 4}, d}, {{2, 3, 6}, indices(0, 4)}, {{2, 3, 6}, d}}, dim(-1),
                               scatter_add_reference));
  return cases;
}

const CaseRegistration registration("scatter", scatter_cases);

TEST_CASE("conformance: embedding_backward, index_add and scatter_add match references and finite differences") {
  run_cases(scatter_cases());
}

}  // namespace
}  // namespace conformance::cases_scatter
