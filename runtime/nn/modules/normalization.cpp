// nn::GroupNorm and nn::RMSNorm: parameters as PyTorch's (weight 1, bias 0), forward through
// group_norm and rms_norm (runtime/functional_norms.cpp), and PyTorch's printed form.
#include "runtime/nn/modules/normalization.h"

#include "runtime/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

GroupNormImpl::GroupNormImpl(int64_t num_groups, int64_t num_channels, GroupNormOptions options, Where where)
    : Module("GroupNorm"), num_groups_(num_groups), num_channels_(num_channels), options_(options) {
  CallSiteScope site(where);
  // PyTorch's check, made when the module is built.
  check(num_groups > 0 && num_channels >= 0 && num_channels % num_groups == 0,
        "GroupNorm: num_channels must be divisible by num_groups (num_groups > 0), got num_groups={} and "
        "num_channels={}",
        num_groups, num_channels);
  check(options.eps >= 0.0, "GroupNorm: eps must be non-negative, got {}", options.eps);
  if (options.affine) {
    const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
    weight = register_parameter("weight", empty({num_channels}, tensor_options));
    bias = register_parameter("bias", empty({num_channels}, tensor_options));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!weight.defined()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

// As PyTorch's forward, group_norm alone checks the input: without affine parameters any channel
// count divisible by num_groups is taken.
Tensor GroupNormImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  return group_norm(input, num_groups_, weight, bias, options_.eps);
}

std::string GroupNormImpl::extra_repr() const {
  return fmt::format("{}, {}, eps={}, affine={}", num_groups_, num_channels_, python_float(options_.eps),
                     python_bool(options_.affine));
}

RMSNormImpl::RMSNormImpl(Dims normalized_shape, RMSNormOptions options, Where where)
    : Module("RMSNorm"), normalized_shape_(normalized_shape), options_(options) {
  CallSiteScope site(where);
  check(!normalized_shape.empty(), "RMSNorm: normalized_shape must have at least one dim");
  for (int64_t size : normalized_shape)
    check(size >= 0, "RMSNorm: normalized_shape {} must have non-negative sizes", normalized_shape);
  if (options.eps) check(*options.eps >= 0.0, "RMSNorm: eps must be non-negative, got {}", *options.eps);
  if (options.elementwise_affine)
    weight = register_parameter("weight", empty(normalized_shape, {.dtype = options.dtype, .device = options.device}));
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNormImpl::forward(const Tensor& input, Where where) {
  return rms_norm(input, normalized_shape_, weight, options_.eps, where);
}

std::string RMSNormImpl::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", python_tuple(normalized_shape_),
                     options_.eps ? python_float(*options_.eps) : "None", python_bool(options_.elementwise_affine));
}

}  // namespace ember::nn
