// PyTorch's multi_head_attention_forward for nn::MultiheadAttention (attention.h): what one call
// needs of the module, and the function (attention_forward.cpp). Internal to the module.
#pragma once

#include <cstdint>
#include <tuple>

#include "runtime/nn/modules/attention.h"

namespace ember::nn {

// The module's parameters and settings for one forward; projection weights it does not use are
// undefined (in_proj_weight, or the three separate ones).
struct AttentionLayer {
  int64_t embed_dim = 0;
  int64_t num_heads = 0;
  int64_t kdim = 0;
  int64_t vdim = 0;
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight;
  Tensor in_proj_bias, bias_k, bias_v;
  Tensor out_proj_weight, out_proj_bias;
  bool add_zero_attn = false;
  double dropout_p = 0.0;  // 0 outside training
  bool batch_first = false;
};

// (output, weights or undefined), shapes as MultiheadAttentionImpl::forward documents.
std::tuple<Tensor, Tensor> multihead_attention(const AttentionLayer& layer, const Tensor& query, const Tensor& key,
                                               const Tensor& value, const MultiheadAttentionForwardOptions& options);

}  // namespace ember::nn
