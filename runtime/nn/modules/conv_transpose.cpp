// nn::ConvTranspose1d/2d/3d: parameters, PyTorch's initialisation and checks, and the forward that
// turns a requested output_size into output_padding (torch.nn's _ConvTransposeNd._output_padding).
#include "runtime/functional.h"
#include "runtime/nn/modules/conv.h"
#include "runtime/nn/modules/conv_parameters.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

ConvTransposeImpl::ConvTransposeImpl(const char* name, int spatial, int64_t in_channels, int64_t out_channels,
                                     const SpatialDims& kernel_size, const ConvTransposeLayerOptions& options,
                                     Where where)
    : Module(name), spatial_(spatial), in_channels_(in_channels), out_channels_(out_channels), groups_(options.groups) {
  CallSiteScope site(where);
  check_conv_layer(name, in_channels, out_channels, options.groups);
  kernel_size_ = kernel_size.expand(spatial, name, "kernel_size");
  stride_ = options.stride.expand(spatial, name, "stride");
  padding_ = options.padding.expand(spatial, name, "padding");
  output_padding_ = options.output_padding.expand(spatial, name, "output_padding");
  dilation_ = options.dilation.expand(spatial, name, "dilation");
  for (int d = 0; d < spatial; ++d) {
    check(kernel_size_[d] > 0 && stride_[d] > 0 && dilation_[d] > 0,
          "{}: kernel_size, stride and dilation must be positive, got kernel_size={} stride={} dilation={}", name,
          kernel_size_, stride_, dilation_);
    check(padding_[d] >= 0 && output_padding_[d] >= 0,
          "{}: padding and output_padding must be non-negative, got padding={} output_padding={}", name, padding_,
          output_padding_);
  }
  Dims weight_shape = {in_channels, out_channels / options.groups};
  for (const int64_t k : kernel_size_) weight_shape.push_back(k);
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  weight = register_parameter("weight", empty(weight_shape, tensor_options));
  if (options.bias) bias = register_parameter("bias", empty({out_channels}, tensor_options));
  reset_parameters(options.generator);
}

void ConvTransposeImpl::reset_parameters(Generator* generator) { reset_conv_parameters(weight, bias, generator); }

namespace {

Tensor transposed(int spatial, const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const ConvTransposeOptions& options) {
  switch (spatial) {
    case 1:
      return conv_transpose1d(input, weight, bias, options);
    case 2:
      return conv_transpose2d(input, weight, bias, options);
    default:
      return conv_transpose3d(input, weight, bias, options);
  }
}

}  // namespace

Tensor ConvTransposeImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  return transposed(spatial_, input, weight, bias,
                    {.stride = stride_,
                     .padding = padding_,
                     .output_padding = output_padding_,
                     .groups = groups_,
                     .dilation = dilation_});
}

Tensor ConvTransposeImpl::forward(const Tensor& input, const Dims& output_size, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "{}: the input must be defined", name());
  check(input.dim() == spatial_ + 1 || input.dim() == spatial_ + 2,
        "{}: expected a {}-D (unbatched) or {}-D (batched) input, but got input of shape {}", name(), spatial_ + 1,
        spatial_ + 2, input.sizes());
  const int leading = input.dim() - spatial_;  // batch and channel dims, or the channel dim alone
  check(output_size.size() == spatial_ || output_size.size() == spatial_ + leading,
        "{}: for {}-D input, output_size must have {} or {} elements (got {})", name(), input.dim(), spatial_,
        spatial_ + leading, output_size);
  // The spatial sizes alone (the batch and channel entries are not checked, as PyTorch's).
  const Dims requested(std::span<const int64_t>(output_size.begin() + (output_size.size() - spatial_), spatial_));
  Dims low, high, output_padding;
  bool inside = true;
  for (int d = 0; d < spatial_; ++d) {
    low.push_back((input.size(leading + d) - 1) * stride_[d] - 2 * padding_[d] + dilation_[d] * (kernel_size_[d] - 1) +
                  1);
    high.push_back(low[d] + stride_[d] - 1);
    inside = inside && requested[d] >= low[d] && requested[d] <= high[d];
    output_padding.push_back(requested[d] - low[d]);
  }
  check(inside, "{}: requested an output size of {}, but valid sizes range from {} to {} (for an input of {})", name(),
        requested, low, high, Dims(std::span<const int64_t>(input.sizes().begin() + leading, spatial_)));
  return transposed(spatial_, input, weight, bias,
                    {.stride = stride_,
                     .padding = padding_,
                     .output_padding = output_padding,
                     .groups = groups_,
                     .dilation = dilation_});
}

std::string ConvTransposeImpl::extra_repr() const {
  const auto differs = [](const Dims& values, int64_t usual) {
    for (const int64_t value : values)
      if (value != usual) return true;
    return false;
  };
  std::string text = fmt::format("{}, {}, kernel_size={}, stride={}", in_channels_, out_channels_,
                                 python_tuple(kernel_size_), python_tuple(stride_));
  if (differs(padding_, 0)) text += ", padding=" + python_tuple(padding_);
  if (differs(dilation_, 1)) text += ", dilation=" + python_tuple(dilation_);
  if (differs(output_padding_, 0)) text += ", output_padding=" + python_tuple(output_padding_);
  if (groups_ != 1) text += fmt::format(", groups={}", groups_);
  if (!bias.defined()) text += ", bias=False";
  return text;
}

}  // namespace ember::nn
