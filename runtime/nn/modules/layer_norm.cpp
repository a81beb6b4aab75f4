// nn::LayerNorm: parameters and forward through the layer_norm op.
#include "runtime/nn/modules/layer_norm.h"

#include "runtime/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

LayerNormImpl::LayerNormImpl(Dims normalized_shape, LayerNormOptions options, Where where)
    : Module("LayerNorm"), normalized_shape_(normalized_shape), options_(options) {
  CallSiteScope site(where);
  check(!normalized_shape.empty(), "LayerNorm: normalized_shape must have at least one dim");
  // Sizes of 0 and eps = 0 are allowed, as in PyTorch and the layer_norm op: a zero-sized
  // normalized_shape makes empty parameters and an empty output.
  for (int64_t size : normalized_shape)
    check(size >= 0, "LayerNorm: normalized_shape {} must have non-negative sizes", normalized_shape);
  check(options.eps >= 0.0, "LayerNorm: eps must be non-negative, got {}", options.eps);
  if (options.elementwise_affine) {
    const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
    weight = register_parameter("weight", empty(normalized_shape, tensor_options));
    if (options.bias) bias = register_parameter("bias", empty(normalized_shape, tensor_options));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!weight.defined()) return;
  init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input, Where where) {
  return layer_norm(input, normalized_shape_, weight, bias, options_.eps, where);
}

std::string LayerNormImpl::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", python_tuple(normalized_shape_), python_float(options_.eps),
                     python_bool(options_.elementwise_affine));
}

}  // namespace ember::nn
