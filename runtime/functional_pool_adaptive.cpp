// adaptive_avg_pool and adaptive_max_pool (functional_pool.h). PyTorch's windows along a dim vary
// in length by one at most, so each dim gathers windows of the longest length K (positions clamped
// into the input) and masks the elements past a window's end before reducing.
#include <algorithm>
#include <vector>

#include "runtime/functional.h"
#include "runtime/functional_pool.h"
#include "runtime/pool_windows.h"

namespace ember {

namespace {

using detail::BatchedInput;
using detail::int64_range;
using detail::int64_scalar;

// One spatial dim: output i pools input [floor(i size / output), ceil((i + 1) size / output)).
struct AdaptiveDim {
  int64_t size = 0;
  int64_t output = 0;

  int64_t start(int64_t i) const { return i * size / output; }
  int64_t end(int64_t i) const { return ((i + 1) * size + output - 1) / output; }
  // The longest window (0 when there are none).
  int64_t longest() const {
    int64_t length = 0;
    for (int64_t i = 0; i < output; ++i) length = std::max(length, end(i) - start(i));
    return length;
  }
};

// The windows' bounds on the device, int64 [O], computed in float64 from arange (exact for any
// i * size below 2^53).
Tensor window_bound(const AdaptiveDim& dim, int64_t shift, bool round_up, Device device) {
  const Tensor numerators = mul(add(to_dtype(int64_range(dim.output, device), kFloat64), static_cast<double>(shift)),
                                static_cast<double>(dim.size));
  const Tensor quotients = div(numerators, static_cast<double>(dim.output));
  return to_dtype(round_up ? ceil(quotients) : floor(quotients), kInt64);
}

// One dim's windows, [..., K, O, ...] at `dim`: `inside` (bool [K, O, 1...], broadcastable to the
// windows) marks the elements that belong to their window; the others repeat a neighbour's.
struct AdaptiveWindows {
  Tensor positions;  // int64 [K * O], k-major
  Tensor inside;
  Tensor counts;     // int64 [O, 1...]: each window's length
  int64_t longest = 0;
};

AdaptiveWindows adaptive_windows(const AdaptiveDim& dim, int trailing_dims, Device device) {
  const int64_t longest = dim.longest();
  const Tensor start = window_bound(dim, 0, /*round_up=*/false, device);
  const Tensor counts = sub(window_bound(dim, 1, /*round_up=*/true, device), start);
  const Tensor k = unsqueeze(int64_range(longest, device), 1);
  const Tensor positions = minimum(add(unsqueeze(start, 0), k), int64_scalar(dim.size - 1, device));
  Dims table = Dims::filled(trailing_dims + 2, 1);
  table[0] = longest;
  table[1] = dim.output;
  Dims per_window = Dims::filled(trailing_dims + 1, 1);
  per_window[0] = dim.output;
  return {reshape(positions, {longest * dim.output}), reshape(lt(k, unsqueeze(counts, 0)), table),
          reshape(counts, per_window), longest};
}

struct AdaptivePlan {
  BatchedInput batched;
  std::vector<AdaptiveDim> dims;
  Dims output_shape;  // batched
  bool empty = false;  // an output size of 0
};

AdaptivePlan adaptive_plan(const char* op, int spatial, const Tensor& input, const SpatialDims& output_size) {
  AdaptivePlan plan{.batched = detail::batched_pool_input(input, spatial, op)};
  check(is_floating(input.dtype()), "{}: the input must be floating point, got {}", op, input.dtype());
  const Dims outputs = output_size.expand(spatial, op, "output_size");
  plan.output_shape = {plan.batched.tensor.size(0), plan.batched.tensor.size(1)};
  for (int d = 0; d < spatial; ++d) {
    check(outputs[d] >= 0, "{}: output_size must be non-negative, got {}", op, outputs);
    plan.dims.push_back({.size = plan.batched.tensor.size(2 + d), .output = outputs[d]});
    plan.output_shape.push_back(outputs[d]);
    plan.empty = plan.empty || outputs[d] == 0;
  }
  return plan;
}

// An output of no elements, still a function of the input (an empty view of it).
Tensor empty_result(const AdaptivePlan& plan) {
  return reshape(slice(plan.batched.tensor, 0, 0, 0), plan.output_shape);
}

Tensor adaptive_avg_pool(const char* op, int spatial, const Tensor& input, const SpatialDims& output_size) {
  const AdaptivePlan plan = adaptive_plan(op, spatial, input, output_size);
  if (plan.empty) return detail::unbatched_like(plan.batched, empty_result(plan));
  const DType dtype = input.dtype();
  const Device device = input.device();
  // bf16 and fp16 are summed in float32 and rounded once, as PyTorch accumulates them.
  const bool low_precision = dtype == kBFloat16 || dtype == kFloat16;
  Tensor result = low_precision ? to_dtype(plan.batched.tensor, kFloat32) : plan.batched.tensor;
  for (int d = 0; d < spatial; ++d) {
    const int dim = 2 + d;
    const AdaptiveWindows windows = adaptive_windows(plan.dims[d], spatial - 1 - d, device);
    const Tensor gathered =
        detail::gather_windows(result, dim, windows.positions, windows.longest, plan.dims[d].output);
    // where, not a product with the mask: a neighbour's inf or NaN must not leak in as 0 * inf.
    const Tensor zero = scalar_tensor(0.0, {.dtype = gathered.dtype(), .device = device});
    result = div(sum(where(windows.inside, gathered, zero), {dim}), to_dtype(windows.counts, gathered.dtype()));
  }
  return detail::unbatched_like(plan.batched, low_precision ? to_dtype(result, dtype) : result);
}

std::tuple<Tensor, Tensor> adaptive_max_pool(const char* op, int spatial, const Tensor& input,
                                             const SpatialDims& output_size, bool with_indices) {
  const AdaptivePlan plan = adaptive_plan(op, spatial, input, output_size);
  const Device device = input.device();
  if (plan.empty) {
    const Tensor values = detail::unbatched_like(plan.batched, empty_result(plan));
    return {values, with_indices ? zeros(values.sizes(), {.dtype = kInt64, .device = device}) : Tensor()};
  }
  Dims sizes;
  for (const AdaptiveDim& dim : plan.dims) sizes.push_back(dim.size);
  const Tensor lowest = scalar_tensor(detail::lowest_value(input.dtype()), {.dtype = input.dtype(), .device = device});
  Tensor values = plan.batched.tensor;
  Tensor positions = with_indices ? detail::plane_positions(sizes, device) : Tensor();
  // The last dim first, so that ties and NaN go as PyTorch's row-major scan (see max_pool).
  for (int d = spatial - 1; d >= 0; --d) {
    const int dim = 2 + d;
    const AdaptiveDim& geometry = plan.dims[d];
    const AdaptiveWindows windows = adaptive_windows(geometry, spatial - 1 - d, device);
    // Elements past a window's end become the lowest value, which never wins over the window's
    // own; PyTorch's kernel starts from the window's first element (k = 0).
    const Tensor windowed = detail::gather_windows(values, dim, windows.positions, windows.longest, geometry.output);
    const Tensor gathered = where(windows.inside, windowed, lowest);
    const Tensor position_windows =
        with_indices ? detail::gather_windows(positions, dim, windows.positions, windows.longest, geometry.output)
                     : Tensor();
    const Tensor first = zeros({geometry.output}, {.dtype = kInt64, .device = device});
    const detail::WindowMax best = detail::window_max(gathered, position_windows, dim, first);
    values = best.values;
    positions = best.positions;
  }
  return {detail::unbatched_like(plan.batched, values),
          with_indices ? detail::unbatched_like(plan.batched, positions) : Tensor()};
}

}  // namespace

Tensor adaptive_avg_pool1d(const Tensor& input, SpatialDims output_size, Where where) {
  CallSiteScope site(where);
  return adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size);
}
Tensor adaptive_avg_pool2d(const Tensor& input, SpatialDims output_size, Where where) {
  CallSiteScope site(where);
  return adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size);
}
Tensor adaptive_avg_pool3d(const Tensor& input, SpatialDims output_size, Where where) {
  CallSiteScope site(where);
  return adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size);
}

Tensor adaptive_max_pool1d(const Tensor& input, SpatialDims output_size, Where where) {
  CallSiteScope site(where);
  return std::get<0>(adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, /*with_indices=*/false));
}
Tensor adaptive_max_pool2d(const Tensor& input, SpatialDims output_size, Where where) {
  CallSiteScope site(where);
  return std::get<0>(adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, /*with_indices=*/false));
}
Tensor adaptive_max_pool3d(const Tensor& input, SpatialDims output_size, Where where) {
  CallSiteScope site(where);
  return std::get<0>(adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, /*with_indices=*/false));
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, SpatialDims output_size,
                                                            Where where) {
  CallSiteScope site(where);
  return adaptive_max_pool("adaptive_max_pool1d_with_indices", 1, input, output_size, /*with_indices=*/true);
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, SpatialDims output_size,
                                                            Where where) {
  CallSiteScope site(where);
  return adaptive_max_pool("adaptive_max_pool2d_with_indices", 2, input, output_size, /*with_indices=*/true);
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, SpatialDims output_size,
                                                            Where where) {
  CallSiteScope site(where);
  return adaptive_max_pool("adaptive_max_pool3d_with_indices", 3, input, output_size, /*with_indices=*/true);
}

}  // namespace ember
