// Pooling's shared pieces (see pool_windows.h): batch handling, window gathers and PyTorch's max.
#include "runtime/pool_windows.h"

#include <limits>

#include "runtime/functional.h"

namespace ember::detail {

BatchedInput batched_pool_input(const Tensor& input, int spatial, const char* op) {
  check(input.defined(), "{}: the input must be defined", op);
  const int rank = input.dim();
  check(rank == spatial + 1 || rank == spatial + 2,
        "{}: expected a {}-D (unbatched) or {}-D (batched) input, got shape {}", op, spatial + 1, spatial + 2,
        input.sizes());
  const bool unbatched = rank == spatial + 1;
  // PyTorch allows an empty batch only: a plane or channel count of 0 leaves nothing to pool.
  for (int d = unbatched ? 0 : 1; d < rank; ++d)
    check(input.size(d) > 0, "{}: expected an input whose dims other than the batch are non-empty, got shape {}", op,
          input.sizes());
  return {unbatched ? unsqueeze(input, 0) : input, unbatched};
}

Tensor unbatched_like(const BatchedInput& input, const Tensor& result) {
  return input.unbatched ? squeeze(result, 0) : result;
}

Tensor int64_range(int64_t count, Device device) {
  return arange(static_cast<double>(count), {.dtype = kInt64, .device = device});
}

Tensor int64_scalar(int64_t value, Device device) {
  return scalar_tensor(static_cast<double>(value), {.dtype = kInt64, .device = device});
}

Tensor gather_windows(const Tensor& input, int dim, const Tensor& positions, int64_t kernel, int64_t count) {
  const Tensor selected = index_select(input, dim, positions);
  Dims split = selected.sizes();
  split[dim] = count;
  split.insert(dim, kernel);
  return reshape(selected, split);
}

double lowest_value(DType dtype) {
  switch (dtype) {
    case DType::Int32:
      return static_cast<double>(std::numeric_limits<int32_t>::min());
    case DType::Int64:  // -2^63, exact as a double
      return static_cast<double>(std::numeric_limits<int64_t>::min());
    case DType::Bool:
      return 0.0;
    default:
      return -std::numeric_limits<double>::infinity();
  }
}

Tensor plane_positions(const Dims& spatial_sizes, Device device) {
  Dims shape = {1, 1};
  for (const int64_t size : spatial_sizes) shape.push_back(size);
  return reshape(int64_range(spatial_sizes.product(), device), shape);
}

WindowMax window_max(const Tensor& windows, const Tensor& positions, int dim, const Tensor& start) {
  const int rank = windows.dim();
  const Device device = windows.device();
  const int64_t kernel = windows.size(dim);
  // Shapes that put a vector on the kernel dim (K) or on the window dim after it (O).
  Dims along_kernel = Dims::filled(rank - dim, 1);
  along_kernel[0] = kernel;
  Dims along_windows = Dims::filled(rank - dim - 1, 1);
  along_windows[0] = windows.size(dim + 1);

  // PyTorch's kernels scan a window in order from its first element in the input (`start`) with
  // the lowest value, and take an element that is greater or NaN: so the first maximum, the last
  // NaN, and `start` where nothing beats the lowest value (the first maximum could be padding then).
  auto [best, chosen] = max(windows, dim, /*keepdim=*/true);
  const Tensor lowest = scalar_tensor(lowest_value(windows.dtype()), {.dtype = windows.dtype(), .device = device});
  chosen = where(eq(best, lowest), reshape(start, along_windows), chosen);
  if (is_floating(windows.dtype())) {
    const Tensor k = reshape(int64_range(kernel, device), along_kernel);
    const Tensor last_nan = amax(where(isnan(windows), k, int64_scalar(-1, device)), {dim}, /*keepdim=*/true);
    chosen = where(ge(last_nan, int64_scalar(0, device)), last_nan, chosen);
  }
  // gather's gradient goes to the chosen element alone (amax would split it over ties).
  const Tensor values = squeeze(gather(windows, dim, chosen), dim);
  if (!positions.defined()) return {values, Tensor()};
  return {values, squeeze(gather(expand(positions, windows.sizes()), dim, chosen), dim)};
}

}  // namespace ember::detail
