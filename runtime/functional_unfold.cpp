// unfold (im2col) and fold (col2im) over two spatial dims, as torch.nn.functional's: the windows of
// conv_windows.h laid out [N, C * kh * kw, L], and their sum back into an image.
#include "runtime/conv_checks.h"
#include "runtime/conv_windows.h"
#include "runtime/functional.h"
#include "runtime/functional_conv.h"

namespace ember {

namespace {

constexpr int kSpatial = 2;  // PyTorch's unfold and fold take images only

struct WindowGeometry {
  Dims kernel, dilation, padding, stride;
  std::vector<detail::WindowDim> dims() const {
    std::vector<detail::WindowDim> result(kSpatial);
    for (int d = 0; d < kSpatial; ++d) result[d] = {.kernel = kernel[d], .stride = stride[d], .dilation = dilation[d]};
    return result;
  }
};

WindowGeometry geometry(const char* op, const SpatialDims& kernel_size, const UnfoldOptions& options) {
  return {.kernel = detail::conv_sizes(op, "kernel_size", kernel_size, kSpatial, true),
          .dilation = detail::conv_sizes(op, "dilation", options.dilation, kSpatial, true),
          .padding = detail::conv_sizes(op, "padding", options.padding, kSpatial, false),
          .stride = detail::conv_sizes(op, "stride", options.stride, kSpatial, true)};
}

}  // namespace

Tensor unfold(const Tensor& input, SpatialDims kernel_size, UnfoldOptions options, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "unfold: the input must be defined");
  check(input.dim() == 3 || input.dim() == 4,
        "unfold: expected a 3-D (unbatched) or 4-D (batched) input, but got input of shape {}", input.sizes());
  const WindowGeometry g = geometry("unfold", kernel_size, options);
  const bool unbatched = input.dim() == 3;
  Tensor x = unbatched ? unsqueeze(input, 0) : input;
  // As PyTorch's im2col_shape_check: before padding, every dim but the batch holds something.
  check(x.size(1) > 0 && x.size(2) > 0 && x.size(3) > 0,
        "unfold: expected a 3-D or 4-D (batched) input with non-zero channel and spatial dims (only the batch may be "
        "0), but got input of shape {}",
        input.sizes());
  if (g.padding[0] > 0 || g.padding[1] > 0) x = pad(x, {g.padding[1], g.padding[1], g.padding[0], g.padding[0]});
  const std::vector<detail::WindowDim> dims = g.dims();
  const int64_t rows = detail::window_count(x.size(2), dims[0]), columns = detail::window_count(x.size(3), dims[1]);
  check(rows > 0 && columns > 0,
        "unfold: the padded input of shape {} holds no window of kernel {} with dilation {} and stride {} (padding "
        "{})",
        x.sizes(), g.kernel, g.dilation, g.stride, g.padding);
  // [N, C, kh, kw, oh, ow] -> [N, C * kh * kw, oh * ow]
  const Tensor result =
      reshape(detail::extract_windows(x, dims), {x.size(0), x.size(1) * g.kernel[0] * g.kernel[1], rows * columns});
  return unbatched ? squeeze(result, 0) : result;
}

Tensor fold(const Tensor& input, SpatialDims output_size, SpatialDims kernel_size, UnfoldOptions options, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "fold: the input must be defined");
  check(input.dim() == 2 || input.dim() == 3,
        "fold: expected a 2-D (unbatched) or 3-D (batched) input, but got input of shape {}", input.sizes());
  const WindowGeometry g = geometry("fold", kernel_size, options);
  const Dims output = detail::conv_sizes("fold", "output_size", output_size, kSpatial, true);
  const bool unbatched = input.dim() == 2;
  const Tensor x = unbatched ? unsqueeze(input, 0) : input;
  const int64_t window = g.kernel[0] * g.kernel[1];
  check(x.size(1) % window == 0 && x.size(1) > 0,
        "fold: expected the input's dimension {} (size {}) to be a non-zero multiple of the kernel's {} elements "
        "(kernel_size {})",
        unbatched ? 0 : 1, x.size(1), window, g.kernel);
  const std::vector<detail::WindowDim> dims = g.dims();
  const Dims full = {output[0] + 2 * g.padding[0], output[1] + 2 * g.padding[1]};
  const int64_t rows = detail::window_count(full[0], dims[0]), columns = detail::window_count(full[1], dims[1]);
  check(rows > 0 && columns > 0 && x.size(2) == rows * columns,
        "fold: given output_size={}, kernel_size={}, dilation={}, padding={}, stride={}, expected the input's "
        "dimension {} to match the calculated number of sliding blocks {} * {} = {}, but got {}",
        output, g.kernel, g.dilation, g.padding, g.stride, unbatched ? 1 : 2, rows, columns, rows * columns, x.size(2));
  const Tensor windows = reshape(x, {x.size(0), x.size(1) / window, g.kernel[0], g.kernel[1], rows, columns});
  Tensor result = detail::sum_windows(windows, full, dims);
  if (g.padding[0] > 0 || g.padding[1] > 0)
    result = contiguous(
        slice(slice(result, 2, g.padding[0], g.padding[0] + output[0]), 3, g.padding[1], g.padding[1] + output[1]));
  return unbatched ? squeeze(result, 0) : result;
}

}  // namespace ember
