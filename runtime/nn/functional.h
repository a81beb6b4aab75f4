// nn::functional: the stateless forms of the layers (torch.nn.functional), so model code can say
// F::relu(x) or F::cross_entropy(logits, target) with `namespace F = ember::nn::functional;`.
// These are the ops of runtime/functional.h, functional_losses_more.h, functional_conv.h and
// functional_pool.h, losses, convolutions and pooling included, resampling (interpolate,
// pixel_shuffle: functional_interpolate.h; affine_grid, grid_sample: functional_grid_sample.h),
// functional_layers_more.h (instance_norm, the channel dropouts, bilinear), functional_pool_more.h
// (max_unpool, lp_pool) and functional_channels.h (local_response_norm, channel_shuffle);
// dropout gets PyTorch's defaults (p = 0.5, training). embedding keeps ember's argument order
// (weight, indices[, padding_idx]) and takes F.embedding's max_norm through EmbeddingFuncOptions
// (functional_embedding.cpp); embedding_bag, in the same order, is in functional_embedding_bag.h.
// The activations torch.nn.functional has beyond those (hardtanh, glu, prelu, rrelu, ...) are in
// nn/functional_activations_more.h.
#pragma once

#include <optional>

#include "runtime/functional.h"
#include "runtime/functional_attention.h"
#include "runtime/functional_conv.h"
#include "runtime/functional_losses_more.h"
#include "runtime/functional_pool.h"
#include "runtime/nn/functional_activations_more.h"
#include "runtime/nn/functional_channels.h"
#include "runtime/nn/functional_embedding_bag.h"
#include "runtime/nn/functional_grid_sample.h"
#include "runtime/nn/functional_interpolate.h"
#include "runtime/nn/functional_layers_more.h"
#include "runtime/nn/functional_pool_more.h"

namespace ember::nn::functional {

using ember::adaptive_avg_pool1d;
using ember::adaptive_avg_pool2d;
using ember::adaptive_avg_pool3d;
using ember::adaptive_max_pool1d;
using ember::adaptive_max_pool1d_with_indices;
using ember::adaptive_max_pool2d;
using ember::adaptive_max_pool2d_with_indices;
using ember::adaptive_max_pool3d;
using ember::adaptive_max_pool3d_with_indices;
using ember::avg_pool1d;
using ember::avg_pool2d;
using ember::avg_pool3d;
using ember::AvgPoolOptions;
using ember::batch_norm;
using ember::binary_cross_entropy;
using ember::binary_cross_entropy_with_logits;
using ember::conv1d;
using ember::conv2d;
using ember::conv3d;
using ember::conv_transpose1d;
using ember::conv_transpose2d;
using ember::conv_transpose3d;
using ember::ConvOptions;
using ember::ConvPadding;
using ember::ConvTransposeOptions;
using ember::cosine_embedding_loss;
using ember::cosine_similarity;
using ember::cross_entropy;
using ember::ctc_loss;
using ember::CrossEntropyOptions;
using ember::elu;
using ember::embedding;
using ember::fold;
using ember::gaussian_nll_loss;
using ember::gelu;
using ember::group_norm;
using ember::hinge_embedding_loss;
using ember::huber_loss;
using ember::kl_div;
using ember::l1_loss;
using ember::layer_norm;
using ember::leaky_relu;
using ember::linear;
using ember::log_softmax;
using ember::margin_ranking_loss;
using ember::max_pool1d;
using ember::max_pool1d_with_indices;
using ember::max_pool2d;
using ember::max_pool2d_with_indices;
using ember::max_pool3d;
using ember::max_pool3d_with_indices;
using ember::MaxPoolOptions;
using ember::mse_loss;
using ember::multi_margin_loss;
using ember::multilabel_margin_loss;
using ember::multilabel_soft_margin_loss;
using ember::nll_loss;
using ember::normalize;
using ember::pad;
using ember::PadMode;
using ember::pairwise_distance;
using ember::poisson_nll_loss;
using ember::Reduction;
using ember::scaled_dot_product_attention;
using ember::relu;
using ember::rms_norm;
using ember::sigmoid;
using ember::silu;
using ember::smooth_l1_loss;
using ember::soft_margin_loss;
using ember::softmax;
using ember::softplus;
using ember::SpatialDims;
using ember::tanh;
using ember::triplet_margin_loss;
using ember::triplet_margin_with_distance_loss;
using ember::unfold;
using ember::UnfoldOptions;
using ember::unfold;
using ember::UnfoldOptions;

// torch.embedding_renorm_: under no-grad, every row of `weight` [V, D] that `indices` looks up
// and whose norm_type-norm exceeds max_norm is scaled in place by max_norm / (norm + 1e-7), the
// scale computed in float64 from the row's norm, as PyTorch does. Indices are checked first, with
// embedding's message, so a bad one changes nothing. Costs O(V D), not O(numel(indices) D): the
// rows are chosen by a mask over the whole table, which capture can record (no host reads).
Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type = 2.0,
                          Where where = Where::current());

// torch.nn.functional.embedding's options (libtorch's F::EmbeddingFuncOptions).
struct EmbeddingFuncOptions {
  std::optional<int64_t> padding_idx = std::nullopt;  // negative counts from the end
  std::optional<double> max_norm = std::nullopt;      // renorm the rows looked up first
  double norm_type = 2.0;
};
// F.embedding(indices, weight, ...) with ember's argument order: with max_norm the rows looked up
// are renormed in place (embedding_renorm_) before the lookup, whose gradient then flows as usual.
Tensor embedding(const Tensor& weight, const Tensor& indices, const EmbeddingFuncOptions& options,
                 Where where = Where::current());

inline Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, Where where = Where::current()) {
  return ember::dropout(input, p, training, where);
}

}  // namespace ember::nn::functional
