// Window gathering and summing, one spatial dim at a time (see conv_windows.h).
#include "runtime/conv_windows.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember::detail {

namespace {

// The input position of each (k, o) pair of one dim, k-major: index[k * O + o] = o * stride +
// k * dilation. int64 throughout, computed on the device from arange.
Tensor window_positions(const WindowDim& dim, int64_t count, Device device) {
  const TensorOptions options{.dtype = kInt64, .device = device};
  const auto constant = [&](int64_t value) { return scalar_tensor(static_cast<double>(value), options); };
  const Tensor k = mul(unsqueeze(arange(static_cast<double>(dim.kernel), options), 1), constant(dim.dilation));
  const Tensor o = mul(unsqueeze(arange(static_cast<double>(count), options), 0), constant(dim.stride));
  return reshape(add(k, o), {dim.kernel * count});
}

}  // namespace

int64_t window_count(int64_t size, const WindowDim& dim) {
  const int64_t span = dim.dilation * (dim.kernel - 1) + 1;
  return size < span ? 0 : (size - span) / dim.stride + 1;
}

Tensor extract_windows(const Tensor& input, const std::vector<WindowDim>& dims) {
  const int spatial = static_cast<int>(dims.size());
  Tensor result = input;
  for (int d = 0; d < spatial; ++d) {
    // Dims before this one have become (K, O) pairs: S_d sits at 2 + 2d.
    const int at = 2 + 2 * d;
    const int64_t count = window_count(input.size(2 + d), dims[d]);
    result = index_select(result, at, window_positions(dims[d], count, input.device()));
    Dims split = result.sizes();
    split[at] = count;
    split.insert(at, dims[d].kernel);
    result = reshape(result, split);
  }
  // (N, C, K1, O1, K2, O2, ...) -> (N, C, K1, K2, ..., O1, O2, ...)
  Dims order = {0, 1};
  for (int d = 0; d < spatial; ++d) order.push_back(2 + 2 * d);
  for (int d = 0; d < spatial; ++d) order.push_back(3 + 2 * d);
  return permute(result, order);
}

Tensor sum_windows(const Tensor& windows, const Dims& sizes, const std::vector<WindowDim>& dims) {
  static const OpDef& index_add = lookup_op("index_add");
  const int spatial = static_cast<int>(dims.size());
  // (N, C, K1.., O1..) -> (N, C, K1, O1, K2, O2, ...)
  Dims order = {0, 1};
  for (int d = 0; d < spatial; ++d) {
    order.push_back(2 + d);
    order.push_back(2 + spatial + d);
  }
  Tensor result = permute(windows, order);
  for (int d = 0; d < spatial; ++d) {
    // Dims before this one are summed already: (K_d, O_d) sits at 2 + d and 3 + d.
    const int at = 2 + d;
    const int64_t count = result.size(at + 1);
    Dims merged = result.sizes();
    merged[at] = dims[d].kernel * count;
    merged.erase(at + 1);
    const Tensor source = reshape(result, merged);
    Dims target = merged;
    target[at] = sizes[d];
    result = dispatch_one(index_add,
                          {zeros(target, {.dtype = windows.dtype(), .device = windows.device()}),
                           window_positions(dims[d], count, windows.device()), source},
                          {{"dim", static_cast<int64_t>(at)}});
  }
  return result;
}

}  // namespace ember::detail
