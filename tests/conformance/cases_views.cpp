// Conformance cases for view ops: view, transpose, permute, slice, expand, squeeze, unsqueeze,
// diagonal.
// References rebuild each result element by element from the input's row-major values.
#include <doctest/doctest.h>

#include <algorithm>

#include "reference.h"

namespace conformance::cases_views {
namespace {

using enum Layout;

// Element `out_index` of the result reads the input at `source(out_index)`.
RefTensor gather_view(const RefTensor& a, const Dims& sizes,
                      const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& source) {
  RefTensor out = filled(sizes, 0.0);
  for (int64_t i = 0; i < out.numel(); ++i) out.values[i] = a.values[ravel(source(unravel(i, sizes)), a.sizes)];
  return out;
}

std::vector<RefTensor> view_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  Dims shape = attrs.get<Dims>("shape");
  int64_t known = 1;
  for (int64_t size : shape) known *= size == -1 ? 1 : size;
  for (int64_t& size : shape)
    if (size == -1) size = in[0].numel() / known;
  return {RefTensor{.sizes = shape, .values = in[0].values}};  // row-major order is unchanged
}

std::vector<RefTensor> permute_reference(const std::vector<RefTensor>& in, const Dims& order) {
  const RefTensor& a = in[0];
  Dims sizes = a.sizes;
  for (int i = 0; i < order.size(); ++i) sizes[i] = a.sizes[wrap(order[i], a.sizes.size())];
  return {gather_view(a, sizes, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> source(index.size());
    for (int i = 0; i < order.size(); ++i) source[wrap(order[i], a.sizes.size())] = index[i];
    return source;
  })};
}

std::vector<RefTensor> transpose_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const int rank = in[0].sizes.size();
  if (rank == 0) return {in[0]};
  Dims order;
  for (int i = 0; i < rank; ++i) order.push_back(i);
  std::swap(order[wrap(attrs.get<int64_t>("dim0"), rank)], order[wrap(attrs.get<int64_t>("dim1"), rank)]);
  return permute_reference(in, order);
}

std::vector<RefTensor> slice_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& a = in[0];
  const int dim = wrap(attrs.get<int64_t>("dim"), a.sizes.size());
  const int64_t size = a.sizes[dim], step = attrs.get<int64_t>("step");
  auto bound = [size](int64_t value) { return std::clamp<int64_t>(value < 0 ? value + size : value, 0, size); };
  const int64_t start = bound(attrs.get<int64_t>("start"));
  const int64_t end = std::max(start, bound(attrs.get<int64_t>("end")));
  Dims sizes = a.sizes;
  sizes[dim] = (end - start + step - 1) / step;
  return {gather_view(a, sizes, [&](std::vector<int64_t> index) {
    index[dim] = start + index[dim] * step;
    return index;
  })};
}

std::vector<RefTensor> expand_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  Dims shape = attrs.get<Dims>("shape");
  const int lead = shape.size() - in[0].sizes.size();
  for (int i = lead; i < shape.size(); ++i)
    if (shape[i] == -1) shape[i] = in[0].sizes[i - lead];
  RefTensor out = filled(shape, 0.0);
  for (int64_t i = 0; i < out.numel(); ++i) out.values[i] = broadcast_at(in[0], shape, i);
  return {out};
}

std::vector<RefTensor> squeeze_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& a = in[0];
  Dims sizes;
  for (int i = 0; i < a.sizes.size(); ++i) {
    const bool targeted = !attrs.has("dim") || wrap(attrs.get<int64_t>("dim"), a.sizes.size()) == i;
    if (!(a.sizes[i] == 1 && targeted)) sizes.push_back(a.sizes[i]);
  }
  return {RefTensor{.sizes = sizes, .values = a.values}};
}

std::vector<RefTensor> unsqueeze_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  Dims sizes = in[0].sizes;
  sizes.insert(wrap(attrs.get<int64_t>("dim"), sizes.size() + 1), 1);
  return {RefTensor{.sizes = sizes, .values = in[0].values}};
}

// Element (.., i) reads the input at row i - offset (offset < 0) or i of dim1 and column i + offset
// (offset > 0) or i of dim2, the kept dims in their order; the length counts the steps that stay
// inside the plane.
std::vector<RefTensor> diagonal_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& a = in[0];
  const int rank = a.sizes.size();
  const int64_t offset = attrs.get<int64_t>("offset");
  const int dim1 = wrap(attrs.get<int64_t>("dim1"), rank), dim2 = wrap(attrs.get<int64_t>("dim2"), rank);
  const int64_t first_row = std::max<int64_t>(-offset, 0), first_column = std::max<int64_t>(offset, 0);
  int64_t length = 0;
  while (first_row + length < a.sizes[dim1] && first_column + length < a.sizes[dim2]) ++length;
  Dims sizes;
  std::vector<int> kept;
  for (int d = 0; d < rank; ++d) {
    if (d == dim1 || d == dim2) continue;
    kept.push_back(d);
    sizes.push_back(a.sizes[d]);
  }
  sizes.push_back(length);
  return {gather_view(a, sizes, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> source(rank);
    for (size_t k = 0; k < kept.size(); ++k) source[kept[k]] = index[k];
    source[dim1] = first_row + index.back();
    source[dim2] = first_column + index.back();
    return source;
  })};
}

Case view_case(const char* op, const char* label, InputSpec input, Attrs attrs, Reference reference) {
  // A view moves no data: results are exact in every dtype.
  Case c{.op = op, .label = label, .inputs = {std::move(input)}, .attrs = attrs, .reference = std::move(reference),
         .float32 = {0, 0}, .float64 = {0, 0}};
  return with_half(c, 0.0);
}

std::vector<Case> view_cases() {
  const Domain d = real();
  std::vector<Case> cases;
  cases.push_back(view_case("view", "[3,4] as [2,6]", {{3, 4}, d}, {{"shape", Dims{2, 6}}}, view_reference));
  cases.push_back(view_case("view", "[2,3,4] as [-1,4]", {{2, 3, 4}, d}, {{"shape", Dims{-1, 4}}}, view_reference));
  cases.push_back(view_case("view", "0-d as [1]", {{}, d}, {{"shape", Dims{1}}}, view_reference));
  cases.push_back(view_case("view", "[1,1] as 0-d", {{1, 1}, d}, {{"shape", Dims{}}}, view_reference));
  cases.push_back(view_case("view", "size-0 [0,3] as [3,0]", {{0, 3}, d}, {{"shape", Dims{3, 0}}}, view_reference));

  const auto transpose_attrs = [](int64_t dim0, int64_t dim1) { return Attrs{{"dim0", dim0}, {"dim1", dim1}}; };
  cases.push_back(view_case("transpose", "[3,4] dims 0,1", {{3, 4}, d}, transpose_attrs(0, 1), transpose_reference));
  cases.push_back(view_case("transpose", "[2,3,4] dims 0,-1", {{2, 3, 4}, d}, transpose_attrs(0, -1), transpose_reference));
  cases.push_back(view_case("transpose", "transposed [4,5] back", {{4, 5}, d, Transposed}, transpose_attrs(1, 0),
                            transpose_reference));
  cases.push_back(view_case("transpose", "strided [2,3,4] dims 1,1", {{2, 3, 4}, d, Strided}, transpose_attrs(1, 1),
                            transpose_reference));
  cases.push_back(view_case("transpose", "size-0 [0,3]", {{0, 3}, d}, transpose_attrs(0, 1), transpose_reference));

  const auto permute_case = [&](const char* label, InputSpec input, Dims order) {
    return view_case("permute", label, std::move(input), {{"order", order}},
                     [order](const std::vector<RefTensor>& in, const Attrs&) { return permute_reference(in, order); });
  };
  cases.push_back(permute_case("[2,3,4] order 2,0,1", {{2, 3, 4}, d}, {2, 0, 1}));
  cases.push_back(permute_case("strided [2,3,4] order -1,1,0", {{2, 3, 4}, d, Strided}, {-1, 1, 0}));
  cases.push_back(permute_case("size-0 [2,0,3] order 1,2,0", {{2, 0, 3}, d}, {1, 2, 0}));
  cases.push_back(permute_case("0-d, empty order", {{}, d}, {}));

  const auto slice_attrs = [](int64_t dim, int64_t start, int64_t end, int64_t step) {
    return Attrs{{"dim", dim}, {"start", start}, {"end", end}, {"step", step}};
  };
  cases.push_back(view_case("slice", "[5,4] dim 0 rows 1..4", {{5, 4}, d}, slice_attrs(0, 1, 4, 1), slice_reference));
  cases.push_back(view_case("slice", "[5,4] dim 1 step 2", {{5, 4}, d}, slice_attrs(1, 0, 4, 2), slice_reference));
  cases.push_back(view_case("slice", "[5,4] negative start, end past the size", {{5, 4}, d},
                            slice_attrs(0, -3, 100, 1), slice_reference));
  cases.push_back(view_case("slice", "transposed [4,5] dim -1 step 3", {{4, 5}, d, Transposed},
                            slice_attrs(-1, 1, 5, 3), slice_reference));
  cases.push_back(view_case("slice", "strided [2,3,4] dim 2", {{2, 3, 4}, d, Strided}, slice_attrs(2, 1, 3, 1),
                            slice_reference));
  cases.push_back(view_case("slice", "empty result (start == end)", {{5, 4}, d}, slice_attrs(0, 2, 2, 1),
                            slice_reference));

  cases.push_back(view_case("expand", "[3,1] to [3,4]", {{3, 1}, d}, {{"shape", Dims{3, 4}}}, expand_reference));
  cases.push_back(view_case("expand", "[4] to [2,3,4]", {{4}, d}, {{"shape", Dims{2, 3, 4}}}, expand_reference));
  cases.push_back(view_case("expand", "[3,1] to [-1,5]", {{3, 1}, d}, {{"shape", Dims{-1, 5}}}, expand_reference));
  cases.push_back(view_case("expand", "0-d to [2,3]", {{}, d}, {{"shape", Dims{2, 3}}}, expand_reference));
  cases.push_back(view_case("expand", "[1,3] to [0,3]", {{1, 3}, d}, {{"shape", Dims{0, 3}}}, expand_reference));
  cases.push_back(view_case("expand", "transposed [4,1] to [2,4,3]", {{4, 1}, d, Transposed},
                            {{"shape", Dims{2, 4, 3}}}, expand_reference));

  cases.push_back(view_case("squeeze", "[1,3,1,4] all", {{1, 3, 1, 4}, d}, {}, squeeze_reference));
  cases.push_back(view_case("squeeze", "[1,3,1,4] dim 2", {{1, 3, 1, 4}, d}, {{"dim", int64_t{2}}}, squeeze_reference));
  cases.push_back(view_case("squeeze", "[3,4] dim 1 (not size 1: unchanged)", {{3, 4}, d}, {{"dim", int64_t{1}}},
                            squeeze_reference));
  cases.push_back(view_case("squeeze", "strided [2,1,3] dim -2", {{2, 1, 3}, d, Strided}, {{"dim", int64_t{-2}}},
                            squeeze_reference));
  cases.push_back(view_case("squeeze", "[1,1] to 0-d", {{1, 1}, d}, {}, squeeze_reference));
  cases.push_back(view_case("squeeze", "size-0 [0,1]", {{0, 1}, d}, {}, squeeze_reference));

  cases.push_back(view_case("unsqueeze", "[3,4] dim 0", {{3, 4}, d}, {{"dim", int64_t{0}}}, unsqueeze_reference));
  cases.push_back(view_case("unsqueeze", "[3,4] dim -1", {{3, 4}, d}, {{"dim", int64_t{-1}}}, unsqueeze_reference));
  cases.push_back(view_case("unsqueeze", "transposed [3,4] dim 1", {{3, 4}, d, Transposed}, {{"dim", int64_t{1}}},
                            unsqueeze_reference));
  cases.push_back(view_case("unsqueeze", "0-d dim 0", {{}, d}, {{"dim", int64_t{0}}}, unsqueeze_reference));
  cases.push_back(view_case("unsqueeze", "size-0 [0] dim 1", {{0}, d}, {{"dim", int64_t{1}}}, unsqueeze_reference));

  const auto diagonal_attrs = [](int64_t offset, int64_t dim1, int64_t dim2) {
    return Attrs{{"offset", offset}, {"dim1", dim1}, {"dim2", dim2}};
  };
  cases.push_back(view_case("diagonal", "[3,4] main", {{3, 4}, d}, diagonal_attrs(0, 0, 1), diagonal_reference));
  cases.push_back(view_case("diagonal", "[3,4] offset 2", {{3, 4}, d}, diagonal_attrs(2, 0, 1), diagonal_reference));
  cases.push_back(view_case("diagonal", "[4,3] offset -1 dims 1,0", {{4, 3}, d}, diagonal_attrs(-1, 1, 0),
                            diagonal_reference));
  cases.push_back(view_case("diagonal", "[2,3,4] dims 0,2 offset 1", {{2, 3, 4}, d}, diagonal_attrs(1, 0, 2),
                            diagonal_reference));
  cases.push_back(view_case("diagonal", "transposed [4,5] offset -2 dims -1,-2", {{4, 5}, d, Transposed},
                            diagonal_attrs(-2, -1, -2), diagonal_reference));
  cases.push_back(view_case("diagonal", "strided [2,3,4] dims 2,0 offset -1", {{2, 3, 4}, d, Strided},
                            diagonal_attrs(-1, 2, 0), diagonal_reference));
  cases.push_back(view_case("diagonal", "expanded [3,4] offset 1", {{3, 4}, d, Expanded}, diagonal_attrs(1, 0, 1),
                            diagonal_reference));
  cases.push_back(view_case("diagonal", "offset past the plane (empty)", {{3, 4}, d}, diagonal_attrs(5, 0, 1),
                            diagonal_reference));
  cases.push_back(view_case("diagonal", "size-0 [2,0,3] dims 0,2", {{2, 0, 3}, d}, diagonal_attrs(0, 0, 2),
                            diagonal_reference));
  return cases;
}

const CaseRegistration registration("views", view_cases);

TEST_CASE("conformance: view ops match references and finite differences") { run_cases(view_cases()); }

}  // namespace
}  // namespace conformance::cases_views
