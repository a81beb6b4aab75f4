// nn::MultiheadAttention (torch.nn's): query, key and value projected into num_heads heads of
// embed_dim / num_heads features, scaled dot-product attention in each head, the heads joined and
// projected back. It follows PyTorch's multi_head_attention_forward step by step
// (runtime/nn/modules/attention.cpp, attention_forward.cpp): its parameters, their
// initialisation, its masks (where a bool mask marks what is NOT attended, the opposite of
// scaled_dot_product_attention's), its shapes and its two paths (with the attention weights, or
// through scaled_dot_product_attention).
#pragma once

#include <optional>
#include <tuple>

#include "runtime/nn/holder.h"
#include "runtime/nn/modules/linear.h"
#include "runtime/random/generator.h"

namespace ember::nn {

// PyTorch's constructor arguments after embed_dim and num_heads, with its defaults.
struct MultiheadAttentionOptions {
  double dropout = 0.0;        // on the attention weights, in training mode only
  bool bias = true;            // in_proj_bias and out_proj's bias
  bool add_bias_kv = false;    // bias_k and bias_v [1, 1, embed_dim], appended to the keys and values
  bool add_zero_attn = false;  // a zero key and value appended after the projections
  std::optional<int64_t> kdim = std::nullopt;  // key features; empty: embed_dim
  std::optional<int64_t> vdim = std::nullopt;  // value features; empty: embed_dim
  bool batch_first = false;    // inputs and output [N, L, E] instead of [L, N, E]
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
  Generator* generator = nullptr;               // initialisation draws; null: the device's default
};

// The arguments of forward after query, key and value, as PyTorch's.
struct MultiheadAttentionForwardOptions {
  Tensor key_padding_mask = {};      // [N, S] ([S] unbatched): bool (true = ignore) or float (added)
  bool need_weights = true;          // also return the attention weights
  Tensor attn_mask = {};             // [L, S] or [N * num_heads, L, S]: bool (true = not attended) or float
  bool average_attn_weights = true;  // the weights averaged over the heads: [N, L, S], else [N, H, L, S]
  bool is_causal = false;            // a hint that attn_mask is the causal mask; it needs attn_mask
};

class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options = {},
                         Where where = Where::current());

  // query [L, N, E] ([N, L, E] with batch_first; [L, E] unbatched), key [S, N, kdim], value
  // [S, N, vdim] -> (output shaped as the query, the weights [N, L, S] or [N, H, L, S] when
  // need_weights, else an undefined tensor). Dropout applies in training mode only.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const MultiheadAttentionForwardOptions& options = {},
                                     Where where = Where::current());
  // mha(query, key, value): the defaults, with the caller's location (ModuleHolder's call).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value, Where where) {
    return forward(query, key, value, {}, where);
  }
  // Redraws the parameters as PyTorch's _reset_parameters: xavier_uniform_ projections, zero
  // biases, xavier_normal_ bias_k and bias_v (out_proj's weight keeps Linear's initialisation).
  void reset_parameters(Generator* generator = nullptr);

  int64_t embed_dim() const { return embed_dim_; }
  int64_t num_heads() const { return num_heads_; }
  int64_t head_dim() const { return embed_dim_ / num_heads_; }
  const MultiheadAttentionOptions& options() const { return options_; }

  // Parameters under PyTorch's names. With kdim = vdim = embed_dim the three projections are
  // rows of in_proj_weight [3 E, E]; otherwise q_proj_weight [E, E], k_proj_weight [E, kdim] and
  // v_proj_weight [E, vdim]. Those not used stay undefined (and unregistered).
  Tensor in_proj_weight;
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;
  Tensor in_proj_bias;     // [3 E]
  Tensor bias_k, bias_v;   // [1, 1, E] with add_bias_kv
  Linear out_proj{nullptr};

 private:
  bool packed_projection() const { return in_proj_weight.defined(); }

  int64_t embed_dim_;
  int64_t num_heads_;
  MultiheadAttentionOptions options_;
};

class MultiheadAttention : public ModuleHolder<MultiheadAttentionImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options = {},
                     Where where = Where::current())
      : ModuleHolder(std::make_shared<MultiheadAttentionImpl>(embed_dim, num_heads, options, where)) {}
};

}  // namespace ember::nn
