// max_unpool and lp_pool of nn::functional (functional_pool_more.h), composites of registry ops.
// max_unpool scatters each plane's values with scatter_add after keeping only the last of any
// indices that repeat (found with a stable sort), so that a repeated index writes its value once,
// as PyTorch's assignment does, instead of adding it up.
#include "runtime/nn/functional_pool_more.h"

#include <fmt/format.h>

#include <string>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/registry.h"
#include "runtime/pool_windows.h"

namespace ember::nn::functional {

namespace {

const char* unpool_name(int spatial) {
  static const char* const names[] = {"max_unpool1d", "max_unpool2d", "max_unpool3d"};
  return names[spatial - 1];
}
const char* lp_pool_name(int spatial) {
  static const char* const names[] = {"lp_pool1d", "lp_pool2d", "lp_pool3d"};
  return names[spatial - 1];
}

// Sizes joined by 'x', as PyTorch's "output volumes are of size 4x4".
std::string volume(const Dims& sizes) {
  std::string text;
  for (int d = 0; d < sizes.size(); ++d) {
    if (d > 0) text += 'x';
    text += std::to_string(sizes[d]);
  }
  return text;
}

// F.max_unpool's _unpool_output_size: the default size per dim, or output_size checked against it.
Dims unpool_output_size(const char* op, const Dims& input_spatial, const Dims& kernel, const Dims& stride,
                        const Dims& padding, const std::optional<Dims>& requested) {
  const int spatial = kernel.size();
  Dims defaults;
  for (int d = 0; d < spatial; ++d) defaults.push_back((input_spatial[d] - 1) * stride[d] + kernel[d] - 2 * padding[d]);
  Dims sizes = defaults;
  if (requested) {
    const Dims& given = *requested;
    check(given.size() == spatial || given.size() == spatial + 2,
          "{}: output_size should be a sequence containing {} or {} elements, but it has a length of '{}' ({})", op,
          spatial, spatial + 2, given.size(), given);
    sizes = Dims{};
    for (int d = given.size() - spatial; d < given.size(); ++d) sizes.push_back(given[d]);
    for (int d = 0; d < spatial; ++d) {
      const int64_t low = defaults[d] - stride[d], high = defaults[d] + stride[d];
      check(low < sizes[d] && sizes[d] < high, "{}: invalid output_size {} (dim {} must be between {} and {})", op,
            given, d, low, high);
    }
  }
  for (int d = 0; d < spatial; ++d)
    check(sizes[d] > 0,
          "{}: the output size {} is not positive (input size {}, kernel_size {}, stride {}, "
          "padding {})",
          op, sizes, input_spatial, kernel, stride, padding);
  return sizes;
}

// PyTorch's CPU check, done where the values can be read without a device sync or a graph break.
void check_index_range(const char* op, const Tensor& indices, const Dims& output_spatial) {
  if (!indices.device().is_cpu() || dispatch_mode_active() || indices.numel() == 0) return;
  const int64_t limit = output_spatial.product();
  const int64_t lowest = amin(indices).item<int64_t>();
  const int64_t highest = amax(indices).item<int64_t>();
  check(lowest >= 0 && highest < limit, "{}: Found an invalid max index: {} (output volumes are of size {})", op,
        lowest < 0 ? lowest : highest, volume(output_spatial));
}

Tensor scatter_add_along_1(const Tensor& self, const Tensor& index, const Tensor& source) {
  static const OpDef& op = lookup_op("scatter_add");
  return dispatch_one(op, {self, index, source}, {{"dim", int64_t{1}}});
}

Tensor max_unpool(int spatial, const Tensor& input, const Tensor& indices, const SpatialDims& kernel_size,
                  const MaxUnpoolOptions& options, const std::optional<Dims>& output_size) {
  const char* op = unpool_name(spatial);
  check(input.defined() && indices.defined(), "{}: the input and indices must be defined", op);
  check(indices.dtype() == kInt64, "{}: elements in indices should be type int64 but got: {}", op, indices.dtype());
  const int rank = input.dim();
  check(rank == spatial + 1 || rank == spatial + 2,
        "{}: expected a {}-D (unbatched) or {}-D (batched) input, got "
        "shape {}",
        op, spatial + 1, spatial + 2, input.sizes());
  check(input.sizes() == indices.sizes(),
        "{}: Expected shape of indices to be same as that of the input tensor ({}) "
        "but got indices tensor with shape: {}",
        op, input.sizes(), indices.sizes());
  for (int d = 1; d < rank; ++d)
    check(input.size(d) > 0,
          "{}: Expected input to have non-zero size for non-batch dimensions, but got {} with "
          "dimension {} being empty",
          op, input.sizes(), d);
  const Dims kernel = kernel_size.expand(spatial, op, "kernel_size");
  const Dims stride = options.stride.values().empty() ? kernel : options.stride.expand(spatial, op, "stride");
  const Dims padding = options.padding.expand(spatial, op, "padding");
  for (int d = 0; d < spatial; ++d) {
    check(kernel[d] > 0, "{}: kernel_size must be greater than zero, got {}", op, kernel);
    check(stride[d] > 0, "{}: strides should be greater than zero, but got stride: {}", op, stride);
  }
  const int lead = rank - spatial;  // C, or N and C
  Dims input_spatial, result_shape;
  for (int d = 0; d < lead; ++d) result_shape.push_back(input.size(d));
  for (int d = lead; d < rank; ++d) input_spatial.push_back(input.size(d));
  const Dims output_spatial = unpool_output_size(op, input_spatial, kernel, stride, padding, output_size);
  for (const int64_t size : output_spatial) result_shape.push_back(size);
  check_index_range(op, indices, output_spatial);

  int64_t planes = 1;
  for (int d = 0; d < lead; ++d) planes *= input.size(d);
  const int64_t length = input_spatial.product();
  const Tensor values = input.reshape({planes, length});
  // Within a plane the stable sort puts equal indices together in their original order, so the
  // last of each run is the last writer, the one PyTorch's loop leaves in place.
  const auto [sorted, order] = sort(indices.reshape({planes, length}), 1, false, true);
  const Tensor last_of_run = cat({ne(sorted.slice(1, 0, length - 1), sorted.slice(1, 1, length)),
                                  ones({planes, 1}, {.dtype = kBool, .device = input.device()})},
                                 1);
  const Tensor in_order = gather(values, 1, order);
  const Tensor written = where(last_of_run, in_order, zeros_like(in_order));
  const Tensor zero_planes =
      zeros({planes, output_spatial.product()}, {.dtype = input.dtype(), .device = input.device()});
  return scatter_add_along_1(zero_planes, sorted, written).reshape(result_shape);
}

// The pooled output size along one dim with no padding and no dilation (PyTorch's
// pooling_output_shape), so that a kernel too large is refused under this op's name.
int64_t lp_output_size(int64_t size, int64_t kernel, int64_t stride, bool ceil_mode) {
  const int64_t span = size - kernel + (ceil_mode ? stride - 1 : 0);
  const int64_t steps = span / stride - (span % stride != 0 && span < 0 ? 1 : 0);  // floor division
  int64_t count = steps + 1;
  // With ceil_mode the last window must start inside the input.
  if (ceil_mode && (count - 1) * stride >= size) --count;
  return count;
}

Tensor lp_pool(int spatial, const Tensor& input, double norm_type, const SpatialDims& kernel_size,
               const LPPoolOptions& options) {
  const char* op = lp_pool_name(spatial);
  const detail::BatchedInput batched = detail::batched_pool_input(input, spatial, op);
  check(is_floating(input.dtype()), "{}: the input must be floating point, got {}", op, input.dtype());
  // Python's 1.0 / norm_type raises ZeroDivisionError for 0.
  check(norm_type != 0.0, "{}: norm_type must not be zero (the result is the 1/norm_type power)", op);
  const Dims kernel = kernel_size.expand(spatial, op, "kernel_size");
  const Dims stride = options.stride.values().empty() ? kernel : options.stride.expand(spatial, op, "stride");
  Dims sizes, outputs;
  for (int d = 0; d < spatial; ++d) {
    check(kernel[d] > 0, "{}: kernel_size must be greater than zero, got {}", op, kernel);
    check(stride[d] > 0, "{}: stride must be greater than zero, got {}", op, stride);
    sizes.push_back(batched.tensor.size(2 + d));
    outputs.push_back(lp_output_size(sizes[d], kernel[d], stride[d], options.ceil_mode));
  }
  for (int d = 0; d < spatial; ++d) {
    // avg_pool3d alone wants the input at least as large as the kernel, even with ceil_mode.
    const bool fits = outputs[d] >= 1 && (spatial != 3 || sizes[d] >= kernel[d]);
    check(fits, "{}: the kernel_size {} is larger than the input size {} (stride {}, ceil_mode {}, output size {})", op,
          kernel, sizes, stride, options.ceil_mode, outputs);
  }
  const AvgPoolOptions average{.stride = stride, .padding = 0, .ceil_mode = options.ceil_mode};
  const Tensor powered = pow(input, norm_type);
  const Tensor mean = spatial == 1   ? avg_pool1d(powered, kernel, average)
                      : spatial == 2 ? avg_pool2d(powered, kernel, average)
                                     : avg_pool3d(powered, kernel, average);
  const Tensor window_sum = mul(mul(sign(mean), relu(abs(mean))), static_cast<double>(kernel.product()));
  return pow(window_sum, 1.0 / norm_type);
}

}  // namespace

Tensor max_unpool1d(const Tensor& input, const Tensor& indices, SpatialDims kernel_size, MaxUnpoolOptions options,
                    std::optional<Dims> output_size, Where where) {
  CallSiteScope site(where);
  return max_unpool(1, input, indices, kernel_size, options, output_size);
}

Tensor max_unpool2d(const Tensor& input, const Tensor& indices, SpatialDims kernel_size, MaxUnpoolOptions options,
                    std::optional<Dims> output_size, Where where) {
  CallSiteScope site(where);
  return max_unpool(2, input, indices, kernel_size, options, output_size);
}

Tensor max_unpool3d(const Tensor& input, const Tensor& indices, SpatialDims kernel_size, MaxUnpoolOptions options,
                    std::optional<Dims> output_size, Where where) {
  CallSiteScope site(where);
  return max_unpool(3, input, indices, kernel_size, options, output_size);
}

Tensor lp_pool1d(const Tensor& input, double norm_type, SpatialDims kernel_size, LPPoolOptions options, Where where) {
  CallSiteScope site(where);
  return lp_pool(1, input, norm_type, kernel_size, options);
}

Tensor lp_pool2d(const Tensor& input, double norm_type, SpatialDims kernel_size, LPPoolOptions options, Where where) {
  CallSiteScope site(where);
  return lp_pool(2, input, norm_type, kernel_size, options);
}

Tensor lp_pool3d(const Tensor& input, double norm_type, SpatialDims kernel_size, LPPoolOptions options, Where where) {
  CallSiteScope site(where);
  return lp_pool(3, input, norm_type, kernel_size, options);
}

}  // namespace ember::nn::functional
