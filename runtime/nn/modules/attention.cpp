// nn::MultiheadAttention: parameters and initialisation as PyTorch's nn.MultiheadAttention, and the
// input checks of its forward (PyTorch's _mha_shape_check and the asserts of
// multi_head_attention_forward); the attention itself is in attention_forward.cpp.
#include "runtime/nn/modules/attention.h"

#include "runtime/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/modules/attention_forward.h"
#include "runtime/nn/training_guard.h"

namespace ember::nn {

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options,
                                               Where where)
    : Module("MultiheadAttention"), embed_dim_(embed_dim), num_heads_(num_heads), options_(options) {
  CallSiteScope site(where);
  check(embed_dim > 0 && num_heads > 0,
        "MultiheadAttention: embed_dim and num_heads must be greater than 0, got embed_dim={} and num_heads={}",
        embed_dim, num_heads);
  check(embed_dim % num_heads == 0, "MultiheadAttention: embed_dim must be divisible by num_heads, got {} and {}",
        embed_dim, num_heads);
  check(options.dropout >= 0.0 && options.dropout <= 1.0,
        "MultiheadAttention: dropout must be a probability in [0, 1], got {}", options.dropout);
  const int64_t kdim = options.kdim.value_or(embed_dim), vdim = options.vdim.value_or(embed_dim);
  check(kdim > 0 && vdim > 0, "MultiheadAttention: kdim and vdim must be greater than 0, got kdim={} and vdim={}", kdim,
        vdim);
  options_.kdim = kdim;
  options_.vdim = vdim;
  // out_proj is made (and draws its Linear initialisation) first, as in PyTorch's constructor;
  // it is registered last, so the parameters list in PyTorch's order (own ones, then out_proj's).
  Linear projection(
      embed_dim, embed_dim,
      {.bias = options.bias, .dtype = options.dtype, .device = options.device, .generator = options.generator});
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  if (kdim == embed_dim && vdim == embed_dim) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}, tensor_options));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({embed_dim, embed_dim}, tensor_options));
    k_proj_weight = register_parameter("k_proj_weight", empty({embed_dim, kdim}, tensor_options));
    v_proj_weight = register_parameter("v_proj_weight", empty({embed_dim, vdim}, tensor_options));
  }
  if (options.bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * embed_dim}, tensor_options));
  if (options.add_bias_kv) {
    bias_k = register_parameter("bias_k", empty({1, 1, embed_dim}, tensor_options));
    bias_v = register_parameter("bias_v", empty({1, 1, embed_dim}, tensor_options));
  }
  out_proj = register_module("out_proj", projection);
  reset_parameters(options.generator);
  options_.generator = nullptr;  // used while building only: not kept, so it is never read after it is gone
}

void MultiheadAttentionImpl::reset_parameters(Generator* generator) {
  if (packed_projection()) {
    init::xavier_uniform_(in_proj_weight, 1.0, generator);
  } else {
    for (Tensor* weight : {&q_proj_weight, &k_proj_weight, &v_proj_weight})
      init::xavier_uniform_(*weight, 1.0, generator);
  }
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k, 1.0, generator);
  if (bias_v.defined()) init::xavier_normal_(bias_v, 1.0, generator);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                           const MultiheadAttentionForwardOptions& options,
                                                           Where where) {
  CallSiteScope site(where);
  const AttentionLayer layer{
      .embed_dim = embed_dim_,
      .num_heads = num_heads_,
      .kdim = *options_.kdim,
      .vdim = *options_.vdim,
      .in_proj_weight = in_proj_weight,
      .q_proj_weight = q_proj_weight,
      .k_proj_weight = k_proj_weight,
      .v_proj_weight = v_proj_weight,
      .in_proj_bias = in_proj_bias,
      .bias_k = bias_k,
      .bias_v = bias_v,
      .out_proj_weight = out_proj->weight,
      .out_proj_bias = out_proj->bias,
      .add_zero_attn = options_.add_zero_attn,
      .dropout_p = options_.dropout > 0.0 && training_for_forward(*this) ? options_.dropout : 0.0,
      .batch_first = options_.batch_first};
  return multihead_attention(layer, query, key, value, options);
}

}  // namespace ember::nn
