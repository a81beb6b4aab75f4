// max_pool and avg_pool (functional_pool.h): PyTorch's argument checks and output sizes, then one
// dim at a time, the input padded (pad()) and its windows gathered along that dim and reduced.
#include "runtime/functional_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/pool_windows.h"

namespace ember {

namespace {

using detail::BatchedInput;

// One spatial dim of a pooling.
struct PoolDim {
  int64_t size = 0;  // the input's
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t output = 0;

  // How far past the input the windows reach: the padding, or with ceil_mode up to the end of the
  // last window (possibly past the padding, or short of it when the last window stops earlier).
  int64_t reach_after() const {
    return std::max<int64_t>(0, (output - 1) * stride + dilation * (kernel - 1) + 1 - size - padding);
  }
};

int64_t floor_divide(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// PyTorch's pooling_output_shape: the last window must start inside the input or its left padding.
int64_t output_size(const PoolDim& dim, bool ceil_mode) {
  const int64_t span = dim.dilation * (dim.kernel - 1) + 1;
  int64_t count = floor_divide(dim.size + 2 * dim.padding - span + (ceil_mode ? dim.stride - 1 : 0), dim.stride) + 1;
  if (ceil_mode && (count - 1) * dim.stride >= dim.size + dim.padding) --count;
  return count;
}

struct PoolArguments {
  const SpatialDims& kernel_size;
  const SpatialDims& stride;
  const SpatialDims& padding;
  const SpatialDims& dilation;
  bool ceil_mode;
  // Whether padding may reach half the dilated kernel rather than half the kernel (see pool_dims).
  bool dilated_padding_limit;
};

// Checks the arguments against the (batched) input as PyTorch's pool shape checks do, and returns
// each spatial dim's geometry.
std::vector<PoolDim> pool_dims(const char* op, const Tensor& input, const PoolArguments& arguments) {
  const int spatial = input.dim() - 2;
  const Dims kernel = arguments.kernel_size.expand(spatial, op, "kernel_size");
  const Dims stride = arguments.stride.values().empty() ? kernel : arguments.stride.expand(spatial, op, "stride");
  const Dims padding = arguments.padding.expand(spatial, op, "padding");
  const Dims dilation = arguments.dilation.expand(spatial, op, "dilation");
  std::vector<PoolDim> dims(spatial);
  Dims sizes, outputs;
  for (int d = 0; d < spatial; ++d) {
    check(kernel[d] > 0, "{}: kernel_size must be greater than zero, got {}", op, kernel);
    check(stride[d] > 0, "{}: stride must be greater than zero, got {}", op, stride);
    check(dilation[d] > 0, "{}: dilation must be greater than zero, got {}", op, dilation);
    check(padding[d] >= 0, "{}: padding must be non-negative, got {}", op, padding);
    const bool dilated = arguments.dilated_padding_limit;
    const int64_t half = (dilated ? dilation[d] * (kernel[d] - 1) + 1 : kernel[d]) / 2;
    check(padding[d] <= half, "{}: padding should be at most half of the {}kernel size, got padding {} for "
          "kernel_size {}{}", op, dilated ? "dilated " : "", padding, kernel,
          dilated ? fmt::format(" and dilation {}", dilation) : std::string());
    dims[d] = {.size = input.size(2 + d), .kernel = kernel[d], .stride = stride[d], .padding = padding[d],
               .dilation = dilation[d]};
    dims[d].output = output_size(dims[d], arguments.ceil_mode);
    sizes.push_back(dims[d].size);
    outputs.push_back(dims[d].output);
  }
  for (int d = 0; d < spatial; ++d)
    check(outputs[d] >= 1, "{}: the output is too small: input size {} with kernel_size {}, stride {}, padding {}, "
          "dilation {} and ceil_mode {} gives output size {}", op, sizes, kernel, stride, padding, dilation,
          arguments.ceil_mode, outputs);
  return dims;
}

// The pad() list for `amount_before`/`amount_after` on dim `dim` of a tensor of `rank` dims.
std::vector<int64_t> pad_on(int dim, int rank, int64_t before, int64_t after) {
  std::vector<int64_t> amounts(2 * static_cast<size_t>(rank - dim), 0);
  amounts[amounts.size() - 2] = before;
  amounts[amounts.size() - 1] = after;
  return amounts;
}

Tensor padded(const Tensor& input, int dim, const PoolDim& geometry, double value) {
  if (geometry.padding == 0 && geometry.reach_after() == 0) return input;
  return pad(input, pad_on(dim, input.dim(), geometry.padding, geometry.reach_after()), PadMode::Constant, value);
}

// Window element k of output o starts at o * stride + k * dilation in the padded dim: [K, O].
Tensor padded_positions(const PoolDim& geometry, Device device) {
  using detail::int64_range;
  const Tensor k = mul(unsqueeze(int64_range(geometry.kernel, device), 1), static_cast<double>(geometry.dilation));
  const Tensor o = mul(unsqueeze(int64_range(geometry.output, device), 0), static_cast<double>(geometry.stride));
  return add(k, o);
}

// PyTorch's padding limit for a max pool: half the dilated kernel in 2-D (pool2d_shape_check), half
// the kernel in 3-D. Its 1-D pool has both: max_pool1d_with_indices, and max_pool1d on CUDA or with
// an input that records gradients, run max_pool2d_with_indices on [N, C, 1, L] (so the dilated
// limit); only its CPU max_pool1d without gradients checks half the kernel.
bool max_pool_dilated_padding_limit(int spatial, const Tensor& input, bool with_indices) {
  if (spatial != 1) return spatial == 2;
  return with_indices || !input.device().is_cpu() || (input.requires_grad() && grad_mode_enabled());
}

// (values, indices); the indices (and their gathers) only `with_indices`.
std::tuple<Tensor, Tensor> max_pool(const char* op, int spatial, const Tensor& input, const SpatialDims& kernel_size,
                                    const MaxPoolOptions& options, bool with_indices) {
  const BatchedInput batched = detail::batched_pool_input(input, spatial, op);
  check(batched.tensor.dtype() != kBool, "{}: bool inputs are not supported (PyTorch's kernels refuse them too)", op);
  const std::vector<PoolDim> dims =
      pool_dims(op, batched.tensor, {kernel_size, options.stride, options.padding, options.dilation,
                                     options.ceil_mode, max_pool_dilated_padding_limit(spatial, input, with_indices)});
  const Device device = input.device();
  const double lowest = detail::lowest_value(input.dtype());
  Dims sizes;
  for (const PoolDim& dim : dims) sizes.push_back(dim.size);
  Tensor values = batched.tensor;
  Tensor positions = with_indices ? detail::plane_positions(sizes, device) : Tensor();  // -1 in the padding
  // The last dim first: a window's first maximum along it, then the first of those along the dim
  // before, ..., is the first maximum in row-major order, as PyTorch's scan finds it (and its last
  // NaN the last NaN).
  for (int d = spatial - 1; d >= 0; --d) {
    const PoolDim& geometry = dims[d];
    const int dim = 2 + d;
    const Tensor table = padded_positions(geometry, device);
    const Tensor flat = reshape(table, {geometry.kernel * geometry.output});
    const Tensor windows =
        detail::gather_windows(padded(values, dim, geometry, lowest), dim, flat, geometry.kernel, geometry.output);
    const Tensor position_windows =
        with_indices ? detail::gather_windows(padded(positions, dim, geometry, -1.0), dim, flat, geometry.kernel,
                                              geometry.output)
                     : Tensor();
    // PyTorch's kernels start from each window's first element inside the input (past the left
    // padding): the first k whose padded position reaches `padding`.
    const Tensor past_padding = ge(table, detail::int64_scalar(geometry.padding, device));
    const Tensor start = amin(where(past_padding, unsqueeze(detail::int64_range(geometry.kernel, device), 1),
                                    detail::int64_scalar(geometry.kernel, device)),
                              {0});
    const detail::WindowMax best = detail::window_max(windows, position_windows, dim, start);
    values = best.values;
    positions = best.positions;
  }
  return {detail::unbatched_like(batched, values),
          with_indices ? detail::unbatched_like(batched, positions) : Tensor()};
}

// PyTorch's divisor along one dim for each output: the window's length clipped to the padded
// input (count_include_pad) or to the input, int64 [O].
Tensor window_counts(const PoolDim& geometry, bool count_include_pad, Device device) {
  using detail::int64_scalar;
  const Tensor start = sub(mul(detail::int64_range(geometry.output, device), static_cast<double>(geometry.stride)),
                           static_cast<double>(geometry.padding));
  const Tensor end = minimum(add(start, static_cast<double>(geometry.kernel)),
                             int64_scalar(geometry.size + geometry.padding, device));
  if (count_include_pad) return sub(end, start);
  return sub(minimum(end, int64_scalar(geometry.size, device)), maximum(start, int64_scalar(0, device)));
}

Tensor avg_pool(const char* op, int spatial, const Tensor& input, const SpatialDims& kernel_size,
                const AvgPoolOptions& options) {
  const BatchedInput batched = detail::batched_pool_input(input, spatial, op);
  const DType dtype = input.dtype();
  check(is_floating(dtype), "{}: the input must be floating point, got {} (PyTorch's CUDA kernel refuses integers "
        "too)", op, dtype);
  check(!options.divisor_override || spatial > 1, "{}: divisor_override is an option of avg_pool2d and avg_pool3d "
        "only, as in PyTorch", op);
  check(!options.divisor_override || *options.divisor_override != 0, "{}: divisor_override must not be zero", op);
  const std::vector<PoolDim> dims =
      pool_dims(op, batched.tensor, {kernel_size, options.stride, options.padding, 1, options.ceil_mode,
                                     /*dilated_padding_limit=*/false});  // no dilation: the same limit
  if (spatial == 3) {  // PyTorch's avg_pool3d alone wants the input at least as large as the kernel
    Dims sizes, kernel;
    for (const PoolDim& dim : dims) sizes.push_back(dim.size), kernel.push_back(dim.kernel);
    for (const PoolDim& dim : dims)
      check(dim.size >= dim.kernel, "{}: the input size {} is smaller than kernel_size {}", op, sizes, kernel);
  }
  const Device device = input.device();
  // bf16 and fp16 are summed in float32 and rounded once, as PyTorch accumulates them.
  const bool low_precision = dtype == kBFloat16 || dtype == kFloat16;
  Tensor sums = low_precision ? to_dtype(batched.tensor, kFloat32) : batched.tensor;
  Tensor divisor;  // int64 [O1, ..., Od], the product of each dim's counts
  for (int d = 0; d < spatial; ++d) {
    const PoolDim& geometry = dims[d];
    const int dim = 2 + d;
    const Tensor flat = reshape(padded_positions(geometry, device), {geometry.kernel * geometry.output});
    sums = sum(detail::gather_windows(padded(sums, dim, geometry, 0.0), dim, flat, geometry.kernel, geometry.output),
               {dim});
    Dims shape = Dims::filled(spatial, 1);
    shape[d] = geometry.output;
    const Tensor counts = reshape(window_counts(geometry, options.count_include_pad, device), shape);
    divisor = divisor.defined() ? mul(divisor, counts) : counts;
  }
  const Tensor result =
      options.divisor_override
          ? div(sums, static_cast<double>(*options.divisor_override))
          : div(sums, to_dtype(divisor, sums.dtype()));
  return detail::unbatched_like(batched, low_precision ? to_dtype(result, dtype) : result);
}

}  // namespace

Tensor max_pool1d(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options, Where where) {
  CallSiteScope site(where);
  return std::get<0>(max_pool("max_pool1d", 1, input, kernel_size, options, /*with_indices=*/false));
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options,
                                                    Where where) {
  CallSiteScope site(where);
  return max_pool("max_pool1d_with_indices", 1, input, kernel_size, options, /*with_indices=*/true);
}
Tensor max_pool2d(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options, Where where) {
  CallSiteScope site(where);
  return std::get<0>(max_pool("max_pool2d", 2, input, kernel_size, options, /*with_indices=*/false));
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options,
                                                    Where where) {
  CallSiteScope site(where);
  return max_pool("max_pool2d_with_indices", 2, input, kernel_size, options, /*with_indices=*/true);
}
Tensor max_pool3d(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options, Where where) {
  CallSiteScope site(where);
  return std::get<0>(max_pool("max_pool3d", 3, input, kernel_size, options, /*with_indices=*/false));
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options,
                                                    Where where) {
  CallSiteScope site(where);
  return max_pool("max_pool3d_with_indices", 3, input, kernel_size, options, /*with_indices=*/true);
}
Tensor avg_pool1d(const Tensor& input, SpatialDims kernel_size, AvgPoolOptions options, Where where) {
  CallSiteScope site(where);
  return avg_pool("avg_pool1d", 1, input, kernel_size, options);
}
Tensor avg_pool2d(const Tensor& input, SpatialDims kernel_size, AvgPoolOptions options, Where where) {
  CallSiteScope site(where);
  return avg_pool("avg_pool2d", 2, input, kernel_size, options);
}
Tensor avg_pool3d(const Tensor& input, SpatialDims kernel_size, AvgPoolOptions options, Where where) {
  CallSiteScope site(where);
  return avg_pool("avg_pool3d", 3, input, kernel_size, options);
}

}  // namespace ember
