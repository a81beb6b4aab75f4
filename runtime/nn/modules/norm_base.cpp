// NormBaseImpl (norm_base.h): the parameters and running estimates BatchNorm and InstanceNorm share.
#include "runtime/nn/modules/norm_base.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/nn/init.h"

namespace ember::nn {

NormBaseImpl::NormBaseImpl(const char* name, const StateOptions& options, Where where)
    : Module(name), track_running_stats_(options.track_running_stats) {
  CallSiteScope site(where);
  check(options.num_features >= 0, "{}: num_features must be non-negative, got {}", name, options.num_features);
  check(is_floating(options.dtype), "{}: dtype must be a floating-point type, got {}", name, options.dtype);
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  const Dims channels{options.num_features};
  if (options.affine) {
    weight = register_parameter("weight", empty(channels, tensor_options));
    bias = register_parameter("bias", empty(channels, tensor_options));
  }
  if (options.track_running_stats) {
    running_mean = register_buffer("running_mean", empty(channels, tensor_options));
    running_var = register_buffer("running_var", empty(channels, tensor_options));
    num_batches_tracked =
        register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::Int64, .device = options.device}));
  }
  reset_parameters();
}

void NormBaseImpl::reset_running_stats() {
  if (!track_running_stats_) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

void NormBaseImpl::reset_parameters() {
  reset_running_stats();
  if (!weight.defined()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

}  // namespace ember::nn
