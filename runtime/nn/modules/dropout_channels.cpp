// nn::Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout: the functional form, gated on the
// module's training flag.
#include "runtime/nn/modules/dropout_channels.h"

#include "runtime/nn/functional_layers_more.h"
#include "runtime/nn/python_repr.h"
#include "runtime/nn/training_guard.h"

namespace ember::nn {

ChannelDropoutImpl::ChannelDropoutImpl(const char* name, Function function, double p, Where where)
    : Module(name), function_(function), p_(p) {
  CallSiteScope site(where);
  check(p >= 0.0 && p <= 1.0, "{}: dropout probability has to be between 0 and 1, but got {}", name, p);
}

Tensor ChannelDropoutImpl::forward(const Tensor& input, Where where) {
  return function_(input, p_, training_for_forward(*this), where);
}

// torch.nn's _DropoutNd fields; ember has no in-place form, which is PyTorch's inplace=False.
std::string ChannelDropoutImpl::extra_repr() const { return "p=" + python_float(p_) + ", inplace=False"; }

Dropout1dImpl::Dropout1dImpl(double p, Where where)
    : ChannelDropoutImpl("Dropout1d", functional::dropout1d, p, where) {}
Dropout2dImpl::Dropout2dImpl(double p, Where where)
    : ChannelDropoutImpl("Dropout2d", functional::dropout2d, p, where) {}
Dropout3dImpl::Dropout3dImpl(double p, Where where)
    : ChannelDropoutImpl("Dropout3d", functional::dropout3d, p, where) {}
AlphaDropoutImpl::AlphaDropoutImpl(double p, Where where)
    : ChannelDropoutImpl("AlphaDropout", functional::alpha_dropout, p, where) {}
FeatureAlphaDropoutImpl::FeatureAlphaDropoutImpl(double p, Where where)
    : ChannelDropoutImpl("FeatureAlphaDropout", functional::feature_alpha_dropout, p, where) {}

}  // namespace ember::nn
