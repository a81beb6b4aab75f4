// nn::InstanceNorm1d/2d/3d: parameters, buffers, PyTorch's input checks and the forward through
// F::instance_norm (torch/nn/modules/instancenorm.py).
#include "runtime/nn/modules/instance_norm.h"

#include "runtime/dispatch.h"
#include "runtime/nn/functional_layers_more.h"
#include "runtime/nn/python_repr.h"
#include "runtime/nn/training_guard.h"

namespace ember::nn {

InstanceNormImpl::InstanceNormImpl(const char* name, int spatial_dims, InstanceNormOptions options, Where where)
    : NormBaseImpl(name, state_options(options), where), options_(options), spatial_dims_(spatial_dims) {}

Tensor InstanceNormImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "{}: the input is an undefined tensor", name());
  const int unbatched_rank = spatial_dims_ + 1;
  check(input.dim() == unbatched_rank || input.dim() == unbatched_rank + 1,
        "{}: expected {}D or {}D input (got {}D input of shape {})", name(), unbatched_rank, unbatched_rank + 1,
        input.dim(), input.sizes());
  const int feature_dim = input.dim() - spatial_dims_ - 1;
  // PyTorch only warns on a mismatch without affine (num_features is unused then), unless running
  // estimates of num_features entries need it to match.
  check(input.size(feature_dim) == options_.num_features || (!options_.affine && !options_.track_running_stats),
        "{}: expected input's size at dim={} to match num_features ({}), but got: {} (input shape {})", name(),
        feature_dim, options_.num_features, input.size(feature_dim), input.sizes());
  const bool training = options_.track_running_stats ? training_for_forward(*this) : is_training();
  const bool use_input_stats = training || !options_.track_running_stats;
  const Tensor batched = input.dim() == unbatched_rank ? input.unsqueeze(0) : input;
  const Tensor output = functional::instance_norm(batched, running_mean, running_var, weight, bias, use_input_stats,
                                                  options_.momentum.value_or(0.0), options_.eps);
  return input.dim() == unbatched_rank ? output.squeeze(0) : output;
}

std::string InstanceNormImpl::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", options_.num_features,
                     python_float(options_.eps), options_.momentum ? python_float(*options_.momentum) : "None",
                     python_bool(options_.affine), python_bool(options_.track_running_stats));
}

}  // namespace ember::nn
