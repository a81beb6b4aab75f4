// Loss modules' constructors and forwards: each forward is one call of the loss function of the
// same name with the module's options and the caller's location.
#include "runtime/nn/modules/loss.h"

namespace ember::nn {

Tensor LossModule::register_option_buffer(std::string name, const Tensor& tensor) {
  if (!tensor.defined()) return {};
  // A tensor that requires grad (a learned class weight) is registered itself: a detached alias
  // would cut the loss's gradient to it, which PyTorch's buffer (the caller's own tensor) passes on.
  return register_buffer(std::move(name), tensor.requires_grad() ? tensor : tensor.detach());
}

CrossEntropyLossImpl::CrossEntropyLossImpl(CrossEntropyLossOptions options)
    : LossModule("CrossEntropyLoss"), options_(std::move(options)) {
  weight = options_.weight = register_option_buffer("weight", options_.weight);
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return cross_entropy(input, target, options_, where);
}

NLLLossImpl::NLLLossImpl(NLLLossOptions options) : LossModule("NLLLoss"), options_(std::move(options)) {
  weight = options_.weight = register_option_buffer("weight", options_.weight);
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return nll_loss(input, target, options_.weight, options_.reduction, options_.ignore_index, where);
}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return mse_loss(input, target, options_.reduction, where);
}

Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return l1_loss(input, target, options_.reduction, where);
}

Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return smooth_l1_loss(input, target, options_.reduction, options_.beta, where);
}

Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return huber_loss(input, target, options_.reduction, options_.delta, where);
}

BCELossImpl::BCELossImpl(BCELossOptions options) : LossModule("BCELoss"), options_(std::move(options)) {
  weight = options_.weight = register_option_buffer("weight", options_.weight);
}

Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return binary_cross_entropy(input, target, options_.weight, options_.reduction, where);
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(BCEWithLogitsLossOptions options)
    : LossModule("BCEWithLogitsLoss"), options_(std::move(options)) {
  weight = options_.weight = register_option_buffer("weight", options_.weight);
  pos_weight = options_.pos_weight = register_option_buffer("pos_weight", options_.pos_weight);
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return binary_cross_entropy_with_logits(input, target, options_.weight, options_.reduction, options_.pos_weight,
                                          where);
}

Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return kl_div(input, target, options_.reduction, options_.log_target, where);
}

}  // namespace ember::nn
