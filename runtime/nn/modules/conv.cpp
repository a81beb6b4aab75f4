// nn::Conv1d/2d/3d: parameters, PyTorch's initialisation and argument checks, padding modes, forward.
#include "runtime/nn/modules/conv.h"

#include <cmath>

#include "runtime/conv_checks.h"
#include "runtime/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/modules/conv_parameters.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace {

const char* padding_mode_name(ConvPaddingMode mode) {
  switch (mode) {
    case ConvPaddingMode::Zeros:
      return "zeros";
    case ConvPaddingMode::Reflect:
      return "reflect";
    case ConvPaddingMode::Replicate:
      return "replicate";
    case ConvPaddingMode::Circular:
      return "circular";
  }
  return "?";
}

PadMode pad_mode_of(ConvPaddingMode mode) {
  switch (mode) {
    case ConvPaddingMode::Reflect:
      return PadMode::Reflect;
    case ConvPaddingMode::Replicate:
      return PadMode::Replicate;
    case ConvPaddingMode::Circular:
      return PadMode::Circular;
    case ConvPaddingMode::Zeros:
      break;
  }
  return PadMode::Constant;
}

}  // namespace

void check_conv_layer(const char* name, int64_t in_channels, int64_t out_channels, int64_t groups) {
  check(groups > 0, "{}: groups must be a positive integer, got {}", name, groups);
  check(in_channels >= 0 && out_channels >= 0,
        "{}: channel counts must be non-negative, got in_channels={} "
        "out_channels={}",
        name, in_channels, out_channels);
  check(in_channels % groups == 0, "{}: in_channels must be divisible by groups, got in_channels={} groups={}", name,
        in_channels, groups);
  check(out_channels % groups == 0, "{}: out_channels must be divisible by groups, got out_channels={} groups={}", name,
        out_channels, groups);
}

void reset_conv_parameters(Tensor& weight, Tensor& bias, Generator* generator) {
  // kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = weight.size(1) * kernel.
  const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
  if (fan_in > 0)
    init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::FanIn, init::Nonlinearity::LeakyReLU, generator);
  if (!bias.defined()) return;
  // PyTorch draws no bias when fan_in is 0 (it stays uninitialised); ember leaves it 0, and the
  // generator's stream is not advanced either way.
  if (fan_in > 0) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    init::uniform_(bias, -bound, bound, generator);
  } else {
    init::zeros_(bias);
  }
}

ConvImpl::ConvImpl(const char* name, int spatial, int64_t in_channels, int64_t out_channels,
                   const SpatialDims& kernel_size, const ConvLayerOptions& options, Where where)
    : Module(name),
      spatial_(spatial),
      in_channels_(in_channels),
      out_channels_(out_channels),
      padding_(options.padding),
      groups_(options.groups),
      padding_mode_(options.padding_mode) {
  CallSiteScope site(where);
  check_conv_layer(name, in_channels, out_channels, options.groups);
  padding_.check_preset(name);
  kernel_size_ = kernel_size.expand(spatial, name, "kernel_size");
  stride_ = options.stride.expand(spatial, name, "stride");
  dilation_ = options.dilation.expand(spatial, name, "dilation");
  for (int d = 0; d < spatial; ++d)
    check(kernel_size_[d] > 0 && stride_[d] > 0 && dilation_[d] > 0,
          "{}: kernel_size, stride and dilation must be positive, got kernel_size={} stride={} dilation={}", name,
          kernel_size_, stride_, dilation_);
  if (padding_.same()) {
    for (const int64_t s : stride_)
      check(s == 1, "{}: padding='same' is not supported for strided convolutions, got stride {}", name, stride_);
    detail::same_padding(kernel_size_, dilation_, pad_before_, pad_after_);
  } else {
    pad_before_ = pad_after_ = padding_.amounts().expand(spatial, name, "padding");
    for (const int64_t amount : pad_before_)
      check(amount >= 0, "{}: padding must be non-negative, got {}", name, pad_before_);
  }
  Dims weight_shape = {out_channels, in_channels / options.groups};
  for (const int64_t k : kernel_size_) weight_shape.push_back(k);
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  weight = register_parameter("weight", empty(weight_shape, tensor_options));
  if (options.bias) bias = register_parameter("bias", empty({out_channels}, tensor_options));
  reset_parameters(options.generator);
}

void ConvImpl::reset_parameters(Generator* generator) { reset_conv_parameters(weight, bias, generator); }

Tensor ConvImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  ConvOptions options{.stride = stride_, .padding = padding_, .dilation = dilation_, .groups = groups_};
  Tensor x = input;
  if (padding_mode_ != ConvPaddingMode::Zeros) {
    // PyTorch's _conv_forward: the mode's border first, then a convolution without padding.
    std::vector<int64_t> pads;
    for (int d = spatial_ - 1; d >= 0; --d) {
      pads.push_back(pad_before_[d]);
      pads.push_back(pad_after_[d]);
    }
    x = pad(x, pads, pad_mode_of(padding_mode_));
    options.padding = 0;
  }
  switch (spatial_) {
    case 1:
      return conv1d(x, weight, bias, options);
    case 2:
      return conv2d(x, weight, bias, options);
    default:
      return conv3d(x, weight, bias, options);
  }
}

std::string ConvImpl::extra_repr() const {
  std::string text = fmt::format("{}, {}, kernel_size={}, stride={}", in_channels_, out_channels_,
                                 python_tuple(kernel_size_), python_tuple(stride_));
  if (padding_.same() || padding_.valid()) {
    text += padding_.same() ? ", padding=same" : ", padding=valid";
  } else {
    bool padded = false;
    for (const int64_t amount : pad_before_) padded = padded || amount != 0;
    if (padded) text += ", padding=" + python_tuple(pad_before_);
  }
  bool dilated = false;
  for (const int64_t d : dilation_) dilated = dilated || d != 1;
  if (dilated) text += ", dilation=" + python_tuple(dilation_);
  if (groups_ != 1) text += fmt::format(", groups={}", groups_);
  if (!bias.defined()) text += ", bias=False";
  if (padding_mode_ != ConvPaddingMode::Zeros)
    text += fmt::format(", padding_mode={}", padding_mode_name(padding_mode_));
  return text;
}

}  // namespace ember::nn
