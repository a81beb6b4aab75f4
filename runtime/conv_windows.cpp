// Window gathering and summing through one flattened-spatial index (see conv_windows.h).
#include "runtime/conv_windows.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember::detail {

namespace {

// Where the window dims sit in the index: kernel dims first ([K..., O...], channels first) or the
// output positions first ([O..., K...], channels last).
enum class Order { KernelFirst, PositionsFirst };

// The flat spatial position of every (window, element) pair: Σ_d (o_d stride_d + k_d dilation_d)
// * row_stride_d over the spatial `sizes`, shaped [K..., O...] or [O..., K...] and flattened.
// int64 throughout, built on the device from arange by broadcasting one term per dim and axis.
Tensor window_index(const Dims& sizes, const Dims& counts, const std::vector<WindowDim>& dims, Order order,
                    Device device) {
  const int spatial = static_cast<int>(dims.size());
  const TensorOptions options{.dtype = kInt64, .device = device};
  const int kernel_axis = order == Order::KernelFirst ? 0 : spatial;
  const int position_axis = order == Order::KernelFirst ? spatial : 0;
  // arange(length) * step, laid along `axis` of a rank-2d shape of ones.
  const auto term = [&](int64_t length, int64_t step, int axis) {
    Dims shape = Dims::filled(2 * spatial, 1);
    shape[axis] = length;
    const Tensor steps = arange(static_cast<double>(length), options);
    return reshape(mul(steps, scalar_tensor(static_cast<double>(step), options)), shape);
  };
  Tensor index;
  int64_t row_stride = 1;
  int64_t total = 1;
  for (int d = spatial - 1; d >= 0; --d) {
    const Tensor along = add(term(dims[d].kernel, dims[d].dilation * row_stride, kernel_axis + d),
                             term(counts[d], dims[d].stride * row_stride, position_axis + d));
    index = index.defined() ? add(index, along) : along;
    row_stride *= sizes[d];
    total *= dims[d].kernel * counts[d];
  }
  return reshape(index, {total});
}

Dims counts_of(const Dims& sizes, const std::vector<WindowDim>& dims) {
  Dims counts;
  for (size_t d = 0; d < dims.size(); ++d) counts.push_back(window_count(sizes[static_cast<int>(d)], dims[d]));
  return counts;
}

Dims spatial_sizes(const Tensor& tensor, int first, int spatial) {
  return Dims(std::span<const int64_t>(tensor.sizes().begin() + first, spatial));
}

// Every window's elements: prod(kernel) * prod(counts), the index's length.
int64_t window_elements(const std::vector<WindowDim>& dims, const Dims& counts) {
  int64_t total = counts.product();
  for (const WindowDim& dim : dims) total *= dim.kernel;
  return total;
}

Tensor add_at(const Tensor& target, const Tensor& index, const Tensor& source, int64_t dim) {
  static const OpDef& index_add = lookup_op("index_add");
  return dispatch_one(index_add, {target, index, source}, {{"dim", dim}});
}

}  // namespace

int64_t window_count(int64_t size, const WindowDim& dim) {
  const int64_t span = dim.dilation * (dim.kernel - 1) + 1;
  return size < span ? 0 : (size - span) / dim.stride + 1;
}

Tensor extract_windows(const Tensor& input, const std::vector<WindowDim>& dims) {
  const int spatial = static_cast<int>(dims.size());
  const Dims sizes = spatial_sizes(input, 2, spatial);
  const Dims counts = counts_of(sizes, dims);
  const Tensor flat = reshape(input, {input.size(0), input.size(1), sizes.product()});
  const Tensor gathered = index_select(flat, 2, window_index(sizes, counts, dims, Order::KernelFirst, input.device()));
  Dims shape = {input.size(0), input.size(1)};
  for (const WindowDim& dim : dims) shape.push_back(dim.kernel);
  for (const int64_t count : counts) shape.push_back(count);
  return reshape(gathered, shape);
}

Tensor sum_windows(const Tensor& windows, const Dims& sizes, const std::vector<WindowDim>& dims) {
  const int spatial = static_cast<int>(dims.size());
  const Dims counts = spatial_sizes(windows, 2 + spatial, spatial);
  const int64_t batch = windows.size(0), channels = windows.size(1);
  const Tensor source = reshape(windows, {batch, channels, window_elements(dims, counts)});
  const Tensor zero = zeros({batch, channels, sizes.product()}, {.dtype = windows.dtype(), .device = windows.device()});
  const Tensor summed =
      add_at(zero, window_index(sizes, counts, dims, Order::KernelFirst, windows.device()), source, 2);
  Dims shape = {batch, channels};
  for (const int64_t size : sizes) shape.push_back(size);
  return reshape(summed, shape);
}

Tensor extract_windows_channels_last(const Tensor& input, const std::vector<WindowDim>& dims) {
  const int spatial = static_cast<int>(dims.size());
  const Dims sizes = spatial_sizes(input, 1, spatial);
  const Dims counts = counts_of(sizes, dims);
  const int64_t channels = input.size(-1);
  const Tensor flat = reshape(input, {input.size(0), sizes.product(), channels});
  const Tensor gathered =
      index_select(flat, 1, window_index(sizes, counts, dims, Order::PositionsFirst, input.device()));
  Dims shape = {input.size(0)};
  for (const int64_t count : counts) shape.push_back(count);
  for (const WindowDim& dim : dims) shape.push_back(dim.kernel);
  shape.push_back(channels);
  return reshape(gathered, shape);
}

Tensor sum_windows_channels_last(const Tensor& windows, const Dims& sizes, const std::vector<WindowDim>& dims) {
  const int spatial = static_cast<int>(dims.size());
  const Dims counts = spatial_sizes(windows, 1, spatial);
  const int64_t batch = windows.size(0), channels = windows.size(-1);
  const Tensor source = reshape(windows, {batch, window_elements(dims, counts), channels});
  const Tensor zero = zeros({batch, sizes.product(), channels}, {.dtype = windows.dtype(), .device = windows.device()});
  const Tensor summed =
      add_at(zero, window_index(sizes, counts, dims, Order::PositionsFirst, windows.device()), source, 1);
  Dims shape = {batch};
  for (const int64_t size : sizes) shape.push_back(size);
  shape.push_back(channels);
  return reshape(summed, shape);
}

}  // namespace ember::detail
