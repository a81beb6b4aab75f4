// conv_transpose1d/2d/3d, the adjoint of a convolution: one GEMM turns each input position into a
// window of the output ([C_in] -> [K..., C_out], channels last), then sum_windows_channels_last
// (conv_windows.h) adds the overlapping windows into the full output and the padding is cut from
// both ends. Under autocast
// the window sums round in the lowered dtype (PyTorch's kernels accumulate them in float32).
#include "runtime/conv_checks.h"
#include "runtime/conv_windows.h"
#include "runtime/functional.h"
#include "runtime/functional_conv.h"

namespace ember {

namespace {

Tensor transposed_convolution(const char* op, int spatial, const Tensor& input_given, const Tensor& weight_given,
                              const Tensor& bias_given, const ConvTransposeOptions& options) {
  const detail::ConvOperands operands = detail::conv_operands(op, spatial, input_given, weight_given, bias_given);
  const Tensor &input = operands.input, &weight = operands.weight, &bias = operands.bias, &x = operands.batched;

  const int64_t groups = options.groups;
  const int64_t channels = x.size(1);
  detail::check_conv_groups(op, weight, groups);
  // PyTorch's order (check_shape_forward): the weight's divisibility first, then the input's channels.
  check(weight.size(0) % groups == 0,
        "{}: given groups={}, expected the weight's dimension 0 (the {} input channels) to be divisible by groups, "
        "but got weight of shape {}",
        op, groups, weight.size(0), weight.sizes());
  check(weight.size(0) == channels,
        "{}: given transposed=1, groups={}, weight of shape {}, expected input of shape {} to have {} channels, but "
        "got {} channels instead",
        op, groups, weight.sizes(), input.sizes(), weight.size(0), channels);
  const int64_t group_out = weight.size(1), out_channels = group_out * groups;
  check(!bias.defined() || bias.size(0) == out_channels,
        "{}: expected a bias of {} elements (the output channels), got shape {}", op, out_channels,
        bias.defined() ? bias.sizes() : Dims{});

  detail::check_conv_not_degenerate(op, x, weight);

  const Dims kernel(std::span<const int64_t>(weight.sizes().begin() + 2, spatial));
  const Dims stride = detail::conv_sizes(op, "stride", options.stride, spatial, true);
  const Dims dilation = detail::conv_sizes(op, "dilation", options.dilation, spatial, true);
  const Dims padding = detail::conv_sizes(op, "padding", options.padding, spatial, false);
  const Dims output_padding = detail::conv_sizes(op, "output_padding", options.output_padding, spatial, false);

  std::vector<detail::WindowDim> windows_of(spatial);
  Dims full, output;  // the output before and after the padding is cut
  for (int d = 0; d < spatial; ++d) {
    check(output_padding[d] < stride[d] || output_padding[d] < dilation[d],
          "{}: output padding must be smaller than either stride or dilation, got output_padding {}, stride {}, "
          "dilation {}",
          op, output_padding, stride, dilation);
    windows_of[d] = {.kernel = kernel[d], .stride = stride[d], .dilation = dilation[d]};
    full.push_back((x.size(2 + d) - 1) * stride[d] + dilation[d] * (kernel[d] - 1) + output_padding[d] + 1);
    output.push_back(full[d] - 2 * padding[d]);
  }
  bool positive = true;
  for (const int64_t size : output) positive = positive && size > 0;
  check(positive,
        "{}: the output size {} is too small (input spatial size {}, kernel {}, stride {}, padding {}, "
        "dilation {}, output_padding {})",
        op, output, Dims(std::span<const int64_t>(x.sizes().begin() + 2, spatial)), kernel, stride, padding, dilation,
        output_padding);

  const int64_t batch = x.size(0), positions = detail::trailing_product(x.sizes(), 2);
  const int64_t group_in = channels / groups, taps = detail::trailing_product(kernel, 0);
  // Channels last, each input position's C_in values become its output window [K..., C_out]: one
  // GEMM over all N * positions rows, per group.
  const Dims to_channels_last = detail::channels_last_order(spatial);
  const Tensor rows = reshape(permute(x, to_channels_last), {batch * positions, groups, group_in});
  // weight [C_in, C_out / G, K...] -> per group [C_in / G, K... C_out / G] (small: one copy).
  const Tensor grouped_weight = reshape(permute(weight, to_channels_last), {groups, group_in, taps * group_out});
  Tensor columns;  // [N * positions, K..., C_out]
  if (groups == 1) {
    columns =
        matmul(reshape(rows, {batch * positions, channels}), reshape(grouped_weight, {channels, taps * group_out}));
  } else {
    const Tensor products = matmul(permute(rows, {1, 0, 2}), grouped_weight);  // [G, N * positions, K C_out/G]
    columns = permute(reshape(products, {groups, batch * positions, taps, group_out}), {1, 2, 0, 3});
  }
  Dims windows_shape = {batch};
  for (int d = 0; d < spatial; ++d) windows_shape.push_back(x.size(2 + d));
  for (const int64_t k : kernel) windows_shape.push_back(k);
  windows_shape.push_back(out_channels);
  Tensor result = detail::sum_windows_channels_last(reshape(columns, windows_shape), full, windows_of);
  // [N, full..., C_out] -> [N, C_out, full...]
  Dims to_channels_first = {0, spatial + 1};
  for (int d = 0; d < spatial; ++d) to_channels_first.push_back(1 + d);
  result = permute(result, to_channels_first);
  for (int d = 0; d < spatial; ++d)
    if (padding[d] > 0) result = slice(result, 2 + d, padding[d], padding[d] + output[d]);
  if (bias.defined()) {
    Dims bias_shape = Dims::filled(spatial + 1, 1);
    bias_shape[0] = out_channels;
    result = add(result, reshape(bias, bias_shape));
  } else if (!result.is_contiguous()) {
    result = contiguous(result);  // a new tensor of its own, as PyTorch's, not a view of the uncut one
  }
  return operands.unbatched ? squeeze(result, 0) : result;
}

}  // namespace

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, ConvTransposeOptions options,
                        Where where) {
  CallSiteScope site(where);
  return transposed_convolution("conv_transpose1d", 1, input, weight, bias, options);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, ConvTransposeOptions options,
                        Where where) {
  CallSiteScope site(where);
  return transposed_convolution("conv_transpose2d", 2, input, weight, bias, options);
}

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, ConvTransposeOptions options,
                        Where where) {
  CallSiteScope site(where);
  return transposed_convolution("conv_transpose3d", 3, input, weight, bias, options);
}

}  // namespace ember
