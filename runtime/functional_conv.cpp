// conv1d/2d/3d: pad, gather the windows channels last (conv_windows.h), one GEMM. Each output
// position's window is a row [K..., C] (contiguous runs of C, so the gather copies runs), and with
// groups == 1 the GEMM is `linear` over all N * positions rows at once, the bias its epilogue (under
// autocast added before the one rounding, as in PyTorch's kernels), and its weight gradient one GEMM
// too. With groups it is a matmul batched over the groups, and the bias is added after. Either way
// the result is laid out contiguously [N, C_out, O...], as PyTorch's for a contiguous input (one
// copy of the output; a channels-last view would save it but make view() fail where PyTorch's works).
#include "runtime/functional_conv.h"

#include <string>

#include "runtime/conv_checks.h"
#include "runtime/conv_windows.h"
#include "runtime/functional.h"

namespace ember {

ConvPadding ConvPadding::parse(std::string_view preset) {
  ConvPadding padding(0);
  padding.same_ = preset == "same";
  padding.valid_ = preset == "valid";
  if (!padding.same_ && !padding.valid_) padding.unknown_preset_ = preset;
  return padding;
}

void ConvPadding::check_preset(const char* op) const {
  check(unknown_preset_.empty(), "{}: padding must be an amount, \"valid\" or \"same\", got \"{}\"", op,
        unknown_preset_);
}

namespace {

// The (before, after) zeros of each spatial dim: the explicit amounts at both ends, or "same"'s
// dilation (kernel - 1) split with the odd element after.
void conv_padding(const char* op, const ConvPadding& padding, const Dims& kernel, const Dims& dilation,
                  const Dims& stride, Dims& before, Dims& after) {
  const int spatial = kernel.size();
  padding.check_preset(op);
  if (!padding.same()) {
    before = after = detail::conv_sizes(op, "padding", padding.amounts(), spatial, false);
    return;
  }
  for (const int64_t s : stride)
    check(s == 1, "{}: padding='same' is not supported for strided convolutions, got stride {}", op, stride);
  detail::same_padding(kernel, dilation, before, after);
}

Tensor convolution(const char* op, int spatial, const Tensor& input_given, const Tensor& weight_given,
                   const Tensor& bias_given, const ConvOptions& options) {
  const detail::ConvOperands operands = detail::conv_operands(op, spatial, input_given, weight_given, bias_given);
  const Tensor &input = operands.input, &weight = operands.weight, &bias = operands.bias;
  Tensor x = operands.batched;  // padded below

  const int64_t groups = options.groups;
  const int64_t channels = x.size(1), out_channels = weight.size(0);
  detail::check_conv_groups(op, weight, groups);
  check(weight.size(1) * groups == channels,
        "{}: given groups={}, weight of shape {}, expected input of shape {} to have {} channels, but got {} "
        "channels instead",
        op, groups, weight.sizes(), input.sizes(), weight.size(1) * groups, channels);
  check(out_channels % groups == 0, "{}: the weight's {} output channels (shape {}) must be divisible by groups={}", op,
        out_channels, weight.sizes(), groups);
  check(!bias.defined() || bias.size(0) == out_channels,
        "{}: expected a bias of {} elements (the output channels), got shape {}", op, out_channels,
        bias.defined() ? bias.sizes() : Dims{});

  const Dims kernel(std::span<const int64_t>(weight.sizes().begin() + 2, spatial));
  const Dims stride = detail::conv_sizes(op, "stride", options.stride, spatial, true);
  const Dims dilation = detail::conv_sizes(op, "dilation", options.dilation, spatial, true);
  Dims before, after;
  conv_padding(op, options.padding, kernel, dilation, stride, before, after);

  std::vector<int64_t> pads;  // pad()'s order: the last dim's pair first
  bool padded = false;
  for (int d = spatial - 1; d >= 0; --d) {
    pads.push_back(before[d]);
    pads.push_back(after[d]);
    padded = padded || before[d] > 0 || after[d] > 0;
  }
  if (padded) x = pad(x, pads);

  std::vector<detail::WindowDim> windows_of(spatial);
  Dims counts, spans;  // spans: the dilated kernel, dilation (kernel - 1) + 1, which must fit
  bool fits = true;
  for (int d = 0; d < spatial; ++d) {
    windows_of[d] = {.kernel = kernel[d], .stride = stride[d], .dilation = dilation[d]};
    counts.push_back(detail::window_count(x.size(2 + d), windows_of[d]));
    spans.push_back(dilation[d] * (kernel[d] - 1) + 1);
    fits = fits && counts[d] > 0;
  }
  check(fits,
        "{}: the padded input's spatial size {} is smaller than the dilated kernel {} (kernel {}, dilation {}): "
        "the kernel can't be greater than the actual input size",
        op, Dims(std::span<const int64_t>(x.sizes().begin() + 2, spatial)), spans, kernel, dilation);
  detail::check_conv_not_degenerate(op, operands.batched, weight);  // after the size check, as PyTorch's

  const int64_t batch = x.size(0), positions = detail::trailing_product(counts, 0);
  const int64_t taps = detail::trailing_product(kernel, 0), row = taps * channels;
  // Channels last, the windows are GEMM rows: [N, O..., K..., C] -> [N, positions, K... C].
  const Tensor windows =
      detail::extract_windows_channels_last(permute(x, detail::channels_last_order(spatial)), windows_of);
  // The weight [C_out, C_in / G, K...] in the rows' order, [C_out, K..., C_in / G] (small: one copy).
  const Tensor weight_rows = permute(weight, detail::channels_last_order(spatial));

  Tensor result;  // [N, C_out, positions]
  if (groups == 1) {
    const Tensor rows = reshape(windows, {batch, positions, row});
    // [N, positions, C_out] -> [N, C_out, positions], copied: PyTorch gives a contiguous input a
    // contiguous output, which CNN heads flatten with view().
    result = contiguous(permute(linear(rows, reshape(weight_rows, {out_channels, row}), bias), {0, 2, 1}));
  } else {
    // Per group g: rows [N * positions, K * C_in / G] times its weight [K * C_in / G, C_out / G].
    const int64_t group_in = channels / groups, group_out = out_channels / groups;
    const Tensor grouped_rows =
        reshape(permute(reshape(windows, {batch * positions, taps, groups, group_in}), {2, 0, 1, 3}),
                {groups, batch * positions, taps * group_in});
    const Tensor grouped_weight =
        permute(reshape(weight_rows, {groups, group_out, taps * group_in}), {0, 2, 1});  // [G, K C_in/G, C_out/G]
    const Tensor products = reshape(matmul(grouped_rows, grouped_weight), {groups, batch, positions, group_out});
    result = reshape(permute(products, {1, 0, 3, 2}), {batch, out_channels, positions});
    if (bias.defined()) result = add(result, reshape(bias, {out_channels, 1}));
  }
  Dims shape = {batch, out_channels};
  for (const int64_t count : counts) shape.push_back(count);
  result = reshape(result, shape);
  return operands.unbatched ? squeeze(result, 0) : result;
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, ConvOptions options, Where where) {
  CallSiteScope site(where);
  return convolution("conv1d", 1, input, weight, bias, options);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, ConvOptions options, Where where) {
  CallSiteScope site(where);
  return convolution("conv2d", 2, input, weight, bias, options);
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, ConvOptions options, Where where) {
  CallSiteScope site(where);
  return convolution("conv3d", 3, input, weight, bias, options);
}

}  // namespace ember
