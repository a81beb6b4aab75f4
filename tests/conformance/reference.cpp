// Float64 reference building blocks and the shared shape variants (see reference.h).
#include "reference.h"

#include <algorithm>
#include <cmath>

namespace conformance {

std::vector<int64_t> unravel(int64_t flat, const Dims& sizes) {
  std::vector<int64_t> index(static_cast<size_t>(sizes.size()));
  for (int i = sizes.size() - 1; i >= 0; --i) {
    index[i] = flat % sizes[i];
    flat /= sizes[i];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const Dims& sizes) {
  int64_t flat = 0;
  for (int i = 0; i < sizes.size(); ++i) flat = flat * sizes[i] + index[i];
  return flat;
}

int wrap(int64_t dim, int rank) { return static_cast<int>(dim < 0 ? dim + rank : dim); }

Dims broadcast(const Dims& a, const Dims& b) {
  const int rank = std::max(a.size(), b.size());
  Dims out = Dims::filled(rank, 1);
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.size());
    const int ib = i - (rank - b.size());
    const int64_t sa = ia >= 0 ? a[ia] : 1;
    const int64_t sb = ib >= 0 ? b[ib] : 1;
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

double broadcast_at(const RefTensor& input, const Dims& out_sizes, int64_t out_flat) {
  const std::vector<int64_t> out_index = unravel(out_flat, out_sizes);
  const int lead = out_sizes.size() - input.sizes.size();
  int64_t flat = 0;
  for (int i = 0; i < input.sizes.size(); ++i) {
    const int64_t coordinate = input.sizes[i] == 1 ? 0 : out_index[i + lead];
    flat = flat * input.sizes[i] + coordinate;
  }
  return input.values[static_cast<size_t>(flat)];
}

RefTensor filled(const Dims& sizes, double value, std::optional<DType> dtype) {
  return {.sizes = sizes, .values = std::vector<double>(static_cast<size_t>(sizes.product()), value), .dtype = dtype};
}

RefTensor unary(const RefTensor& a, const std::function<double(double)>& fn, std::optional<DType> dtype) {
  RefTensor out{.sizes = a.sizes, .values = a.values, .dtype = dtype};
  for (double& value : out.values) value = fn(value);
  return out;
}

RefTensor binary(const RefTensor& a, const RefTensor& b, const std::function<double(double, double)>& fn,
                 std::optional<DType> dtype) {
  RefTensor out = filled(broadcast(a.sizes, b.sizes), 0.0, dtype);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.values[i] = fn(broadcast_at(a, out.sizes, i), broadcast_at(b, out.sizes, i));
  return out;
}

RefTensor reduce(const RefTensor& a, const Dims& dims, bool keepdim,
                 const std::function<double(const std::vector<double>&)>& fn, std::optional<DType> dtype) {
  std::vector<bool> reduced(static_cast<size_t>(a.sizes.size()), dims.empty());
  for (int64_t dim : dims) reduced[wrap(dim, a.sizes.size())] = true;
  Dims kept_sizes;  // the output shape with reduced dims as 1
  Dims out_sizes;
  for (int i = 0; i < a.sizes.size(); ++i) {
    kept_sizes.push_back(reduced[i] ? 1 : a.sizes[i]);
    if (!reduced[i] || keepdim) out_sizes.push_back(reduced[i] ? 1 : a.sizes[i]);
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(kept_sizes.product()));
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, a.sizes);
    for (int d = 0; d < a.sizes.size(); ++d)
      if (reduced[d]) index[d] = 0;
    groups[ravel(index, kept_sizes)].push_back(a.values[i]);
  }
  RefTensor out = filled(out_sizes, 0.0, dtype);
  for (size_t g = 0; g < groups.size(); ++g) out.values[g] = fn(groups[g]);
  return out;
}

RefTensor along(const RefTensor& a, int64_t dim_attr,
                const std::function<std::vector<double>(const std::vector<double>&)>& fn) {
  RefTensor out = a;
  if (a.sizes.size() == 0) {  // a 0-d tensor is one slice of one element
    out.values = fn(a.values);
    return out;
  }
  const int dim = wrap(dim_attr, a.sizes.size());
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, a.sizes);
    if (index[dim] != 0) continue;  // visit each slice once, from its first element
    std::vector<double> slice;
    for (int64_t k = 0; k < a.sizes[dim]; ++k) {
      index[dim] = k;
      slice.push_back(a.values[ravel(index, a.sizes)]);
    }
    const std::vector<double> result = fn(slice);
    for (int64_t k = 0; k < a.sizes[dim]; ++k) {
      index[dim] = k;
      out.values[ravel(index, a.sizes)] = result[k];
    }
  }
  return out;
}

double sum_of(const std::vector<double>& values) {
  double total = 0.0;
  for (double value : values) total += value;
  return total;
}
double mean_of(const std::vector<double>& values) {
  return values.empty() ? std::nan("") : sum_of(values) / static_cast<double>(values.size());
}
double max_of(const std::vector<double>& values) { return *std::max_element(values.begin(), values.end()); }
double min_of(const std::vector<double>& values) { return *std::min_element(values.begin(), values.end()); }

std::vector<Variant> unary_variants(const Domain& domain) {
  using enum Layout;
  return {
      {"contiguous [3,4]", {{{3, 4}, domain}}},
      {"transposed [4,5]", {{{4, 5}, domain, Transposed}}},
      {"strided [2,3,4] with offset", {{{2, 3, 4}, domain, Strided}}},
      {"expanded [3,4] (stride 0)", {{{3, 4}, domain, Expanded}}},
      {"size-0 [0,3]", {{{0, 3}, domain}}},
      {"size-1 [1,1,1]", {{{1, 1, 1}, domain}}},
      {"0-d", {{{}, domain}}},
      {"large [131,257] (parallel path)", {{{131, 257}, domain}}, false},
  };
}

std::vector<Variant> binary_variants(const Domain& a, const Domain& b) {
  using enum Layout;
  return {
      {"same shape [3,4]", {{{3, 4}, a}, {{3, 4}, b}}},
      {"broadcast [3,4] with [4]", {{{3, 4}, a}, {{4}, b}}},
      {"broadcast [3,1] with [1,4]", {{{3, 1}, a}, {{1, 4}, b}}},
      {"broadcast [2,3,4] with [3,1]", {{{2, 3, 4}, a}, {{3, 1}, b}}},
      {"broadcast 0-d with [2,3]", {{{}, a}, {{2, 3}, b}}},
      {"transposed [4,5] with strided [4,5]", {{{4, 5}, a, Transposed}, {{4, 5}, b, Strided}}},
      {"expanded [3,4] with [3,4]", {{{3, 4}, a, Expanded}, {{3, 4}, b}}},
      {"size-0 [0,3] with [3]", {{{0, 3}, a}, {{3}, b}}},
      {"size-1 [1] with [1,1]", {{{1}, a}, {{1, 1}, b}}},
      {"0-d with 0-d", {{{}, a}, {{}, b}}},
      {"large [131,257] with [257] (parallel path)", {{{131, 257}, a}, {{257}, b}}, false},
  };
}

}  // namespace conformance
