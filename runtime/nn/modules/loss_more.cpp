// The forwards of the loss modules of loss_more.h: one call of the loss function of the same
// name with the module's options and the caller's location.
#include "runtime/nn/modules/loss_more.h"

#include <utility>

namespace ember::nn {

Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target, Where where) {
  return margin_ranking_loss(input1, input2, target, options_, where);
}

Tensor HingeEmbeddingLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return hinge_embedding_loss(input, target, options_, where);
}

Tensor SoftMarginLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return soft_margin_loss(input, target, options_, where);
}

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(MultilabelSoftMarginLossOptions options) : LossModule("MultiLabelSoftMarginLoss"), options_(std::move(options)) {
  weight = options_.weight = register_option_buffer("weight", options_.weight);
}

Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return multilabel_soft_margin_loss(input, target, options_, where);
}

MultiMarginLossImpl::MultiMarginLossImpl(MultiMarginLossOptions options)
    : LossModule("MultiMarginLoss"), options_(std::move(options)) {
  weight = options_.weight = register_option_buffer("weight", options_.weight);
}

Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return multi_margin_loss(input, target, options_, where);
}

Tensor MultiLabelMarginLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return multilabel_margin_loss(input, target, options_, where);
}

Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target, Where where) {
  return cosine_embedding_loss(input1, input2, target, options_, where);
}

Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative, Where where) {
  return triplet_margin_loss(anchor, positive, negative, options_, where);
}

Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                                  Where where) {
  return triplet_margin_with_distance_loss(anchor, positive, negative, options_, where);
}

Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths, Where where) {
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, options_, where);
}

Tensor PoissonNLLLossImpl::forward(const Tensor& input, const Tensor& target, Where where) {
  return poisson_nll_loss(input, target, options_, where);
}

Tensor GaussianNLLLossImpl::forward(const Tensor& input, const Tensor& target, const Tensor& var, Where where) {
  return gaussian_nll_loss(input, target, var, options_, where);
}
}  // namespace ember::nn
