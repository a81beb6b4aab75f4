// The layers of channel_layers.h: forward calls the function; extra_repr prints as torch.nn's.
#include "runtime/nn/modules/channel_layers.h"

#include <fmt/format.h>

#include "runtime/functional.h"
#include "runtime/nn/functional_channels.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

Tensor LocalResponseNormImpl::forward(const Tensor& input, Where where) {
  return functional::local_response_norm(input, options_.size, options_.alpha, options_.beta, options_.k, where);
}

std::string LocalResponseNormImpl::extra_repr() const {
  return fmt::format("{}, alpha={}, beta={}, k={}", options_.size, python_float(options_.alpha),
                     python_float(options_.beta), python_float(options_.k));
}

Tensor ChannelShuffleImpl::forward(const Tensor& input, Where where) {
  return functional::channel_shuffle(input, groups_, where);
}

std::string ChannelShuffleImpl::extra_repr() const { return fmt::format("groups={}", groups_); }

Tensor Softmax2dImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "Softmax2d: the input must be defined");
  check(input.dim() == 3 || input.dim() == 4, "Softmax2d: expected input to be 3D or 4D, got {}D instead (shape {})",
        input.dim(), input.sizes());
  return softmax(input, -3);
}

}  // namespace ember::nn
