// Conformance cases for indexing and joining: embedding, cat, index_select, gather, one_hot.
// Index inputs repeat entries, so gradients must accumulate rather than overwrite.
#include <doctest/doctest.h>

#include "reference.h"

namespace conformance::cases_index {
namespace {

using enum Layout;
using ember::kInt64;

// embedding(weight [V, D], indices [*]) -> [*, D]
std::vector<RefTensor> embedding_reference(const std::vector<RefTensor>& in, const Attrs&) {
  const RefTensor& weight = in[0];
  const RefTensor& index = in[1];
  const int64_t width = weight.sizes[1];
  Dims sizes = index.sizes;
  sizes.push_back(width);
  RefTensor out = filled(sizes, 0.0);
  for (int64_t i = 0; i < index.numel(); ++i)
    for (int64_t j = 0; j < width; ++j)
      out.values[i * width + j] = weight.values[static_cast<int64_t>(index.values[i]) * width + j];
  return {out};
}

std::vector<RefTensor> cat_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const int dim = wrap(attrs.get<int64_t>("dim"), in[0].sizes.size());
  Dims sizes = in[0].sizes;
  sizes[dim] = 0;
  for (const RefTensor& part : in) sizes[dim] += part.sizes[dim];
  RefTensor out = filled(sizes, 0.0);
  int64_t start = 0;
  for (const RefTensor& part : in) {
    for (int64_t i = 0; i < part.numel(); ++i) {
      std::vector<int64_t> index = unravel(i, part.sizes);
      index[dim] += start;
      out.values[ravel(index, sizes)] = part.values[i];
    }
    start += part.sizes[dim];
  }
  return {out};
}

std::vector<RefTensor> index_select_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& a = in[0];
  const RefTensor& index = in[1];
  const int dim = wrap(attrs.get<int64_t>("dim"), a.sizes.size());
  Dims sizes = a.sizes;
  sizes[dim] = index.numel();
  RefTensor out = filled(sizes, 0.0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> position = unravel(i, sizes);
    position[dim] = static_cast<int64_t>(index.values[position[dim]]);
    out.values[i] = a.values[ravel(position, a.sizes)];
  }
  return {out};
}

// gather: out[i][j] = a[index[i][j]][j] along dim 0, and likewise for other dims.
std::vector<RefTensor> gather_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& a = in[0];
  const RefTensor& index = in[1];
  const int dim = wrap(attrs.get<int64_t>("dim"), a.sizes.size());
  RefTensor out = filled(index.sizes, 0.0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> position = unravel(i, index.sizes);
    position[dim] = static_cast<int64_t>(index.values[i]);
    out.values[i] = a.values[ravel(position, a.sizes)];
  }
  return {out};
}

std::vector<RefTensor> one_hot_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& index = in[0];
  int64_t classes = attrs.get<int64_t>("num_classes");
  if (classes < 0) classes = static_cast<int64_t>(max_of(index.values)) + 1;
  Dims sizes = index.sizes;
  sizes.push_back(classes);
  RefTensor out = filled(sizes, 0.0, kInt64);
  for (int64_t i = 0; i < index.numel(); ++i) out.values[i * classes + static_cast<int64_t>(index.values[i])] = 1.0;
  return {out};
}

Case index_case(const char* op, const char* label, std::vector<InputSpec> inputs, Attrs attrs, Reference reference,
                bool gradcheck = true) {
  // Gathers copy values: results are exact in every dtype.
  Case c{.op = op, .label = label, .inputs = std::move(inputs), .attrs = attrs, .reference = std::move(reference),
         .float32 = {0, 0}, .float64 = {0, 0}, .gradcheck = gradcheck};
  return with_half(c, 0.0);
}

std::vector<Case> index_cases() {
  const Domain d = real();
  std::vector<Case> cases;
  const std::vector<std::pair<const char*, std::vector<InputSpec>>> embedding_inputs = {
      {"weight [6,3], indices [4] with repeats", {{{6, 3}, d}, {{4}, indices(0, 3)}}},
      {"weight [6,3], indices [2,5]", {{{6, 3}, d}, {{2, 5}, indices(0, 6)}}},
      {"transposed weight, strided indices", {{{6, 3}, d, Transposed}, {{2, 3}, indices(0, 6), Strided}}},
      {"0-d index", {{{6, 3}, d}, {{}, indices(0, 6)}}},
      {"size-0 indices [0]", {{{6, 3}, d}, {{0}, indices(0, 6)}}},
      {"size-1 weight [1,1]", {{{1, 1}, d}, {{3}, indices(0, 1)}}},
      {"large weight [1000,64], 512 indices (parallel path)", {{{1000, 64}, d}, {{512}, indices(0, 1000)}}},
  };
  for (const auto& [label, inputs] : embedding_inputs)
    cases.push_back(index_case("embedding", label, inputs, {}, embedding_reference,
                               inputs[0].sizes.product() < 100));

  struct CatShape {
    const char* label;
    std::vector<InputSpec> inputs;
    int64_t dim;
  };
  const std::vector<CatShape> cat_shapes = {
      {"three [2,3] along dim 0", {{{2, 3}, d}, {{1, 3}, d}, {{4, 3}, d}}, 0},
      {"[2,3] and [2,4] along dim 1", {{{2, 3}, d}, {{2, 4}, d}}, 1},
      {"[2,3,2] parts along dim -2", {{{2, 3, 2}, d}, {{2, 1, 2}, d}}, -2},
      {"transposed, strided and expanded parts", {{{4, 3}, d, Transposed}, {{2, 3}, d, Strided}, {{3, 3}, d, Expanded}}, 0},
      {"with a size-0 part", {{{2, 3}, d}, {{0, 3}, d}, {{1, 3}, d}}, 0},
      {"single part", {{{2, 3}, d}}, 1},
      {"1-D parts", {{{3}, d}, {{1}, d}}, 0},
      {"large [131,257] parts (parallel path)", {{{131, 257}, d}, {{131, 1}, d}}, 1},
  };
  for (const CatShape& shape : cat_shapes)
    cases.push_back(index_case("cat", shape.label, shape.inputs, {{"dim", shape.dim}}, cat_reference,
                               shape.inputs[0].sizes.product() < 1000));

  struct SelectShape {
    const char* label;
    std::vector<InputSpec> inputs;
    int64_t dim;
  };
  const std::vector<SelectShape> select_shapes = {
      {"[5,3] dim 0 with repeats", {{{5, 3}, d}, {{6}, indices(0, 3)}}, 0},
      {"[3,5] dim 1", {{{3, 5}, d}, {{4}, indices(0, 5)}}, 1},
      {"[2,3,4] dim -1", {{{2, 3, 4}, d}, {{2}, indices(0, 4)}}, -1},
      {"transposed [4,5] dim 1, strided index", {{{4, 5}, d, Transposed}, {{3}, indices(0, 5), Strided}}, 1},
      {"empty index", {{{4, 3}, d}, {{0}, indices(0, 4)}}, 0},
      {"size-1 [1,1]", {{{1, 1}, d}, {{2}, indices(0, 1)}}, 0},
  };
  for (const SelectShape& shape : select_shapes)
    cases.push_back(index_case("index_select", shape.label, shape.inputs, {{"dim", shape.dim}},
                               index_select_reference));

  const std::vector<SelectShape> gather_shapes = {
      {"[4,3] dim 0 with repeats", {{{4, 3}, d}, {{5, 3}, indices(0, 2)}}, 0},
      {"[3,5] dim 1, smaller index", {{{3, 5}, d}, {{2, 4}, indices(0, 5)}}, 1},
      {"[2,3,4] dim -1", {{{2, 3, 4}, d}, {{2, 3, 2}, indices(0, 4)}}, -1},
      {"transposed [4,5] dim 0, strided index", {{{4, 5}, d, Transposed}, {{3, 5}, indices(0, 4), Strided}}, 0},
      {"size-0 index [0,3]", {{{4, 3}, d}, {{0, 3}, indices(0, 4)}}, 0},
      {"size-1 [1,1]", {{{1, 1}, d}, {{1, 1}, indices(0, 1)}}, 1},
  };
  for (const SelectShape& shape : gather_shapes)
    cases.push_back(index_case("gather", shape.label, shape.inputs, {{"dim", shape.dim}}, gather_reference));

  const std::vector<std::pair<const char*, std::pair<InputSpec, int64_t>>> one_hot_shapes = {
      {"[5] num_classes 4", {{{5}, indices(0, 4)}, 4}},
      {"[2,3] inferred num_classes", {{{2, 3}, indices(0, 5)}, -1}},
      {"strided [4] num_classes 6", {{{4}, indices(0, 6), Strided}, 6}},
      {"0-d num_classes 3", {{{}, indices(0, 3)}, 3}},
      {"size-0 [0] num_classes 3", {{{0}, indices(0, 3)}, 3}},
  };
  for (const auto& [label, shape] : one_hot_shapes)
    cases.push_back(index_case("one_hot", label, {shape.first}, {{"num_classes", shape.second}}, one_hot_reference));
  return cases;
}

const CaseRegistration registration("index", index_cases);

TEST_CASE("conformance: embedding, cat, index_select, gather and one_hot match references and finite differences") {
  run_cases(index_cases());
}

}  // namespace
}  // namespace conformance::cases_index
