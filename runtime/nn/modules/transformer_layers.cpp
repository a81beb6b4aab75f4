// nn::TransformerEncoderLayer and nn::TransformerDecoderLayer in the order of PyTorch's forward:
// self-attention (and, in the decoder, attention over the memory) and the feed-forward block
// linear2(dropout(activation(linear1(x)))), each followed by its dropout and added to its input;
// post-norm normalises each sum, pre-norm (norm_first) each block's input.
#include "runtime/functional.h"
#include "runtime/nn/modules/transformer.h"

namespace ember::nn {

namespace {

void check_layer_arguments(const char* layer, int64_t d_model, int64_t nhead, const TransformerLayerOptions& options) {
  check(d_model > 0 && nhead > 0 && d_model % nhead == 0,
        "{}: d_model must be a positive multiple of nhead, got d_model={} and nhead={}", layer, d_model, nhead);
  // 0 is PyTorch's too: Linear(d_model, 0) and Linear(0, d_model), a feed-forward block of zeros.
  check(options.dim_feedforward >= 0, "{}: dim_feedforward must be non-negative, got {}", layer,
        options.dim_feedforward);
  check(options.dropout >= 0.0 && options.dropout <= 1.0, "{}: dropout must be a probability in [0, 1], got {}", layer,
        options.dropout);
}

MultiheadAttention make_attention(int64_t d_model, int64_t nhead, const TransformerLayerOptions& options) {
  return MultiheadAttention(d_model, nhead,
                            {.dropout = options.dropout,
                             .batch_first = options.batch_first,
                             .dtype = options.dtype,
                             .device = options.device,
                             .generator = options.generator});
}

Linear make_linear(int64_t in, int64_t out, const TransformerLayerOptions& options) {
  return Linear(in, out, {.dtype = options.dtype, .device = options.device, .generator = options.generator});
}

LayerNorm make_norm(int64_t d_model, const TransformerLayerOptions& options) {
  return LayerNorm(d_model, {.eps = options.layer_norm_eps, .dtype = options.dtype, .device = options.device});
}

// linear2(dropout(activation(linear1(x)))), before the block's own dropout.
Tensor feed_forward(const Linear& linear1, const Linear& linear2, const Dropout& dropout,
                    TransformerActivation activation, const Tensor& x) {
  const Tensor hidden = linear1(x);
  return linear2(dropout(activation == TransformerActivation::GELU ? gelu(hidden) : relu(hidden)));
}

// One of the attention blocks: attention of x over `source` with these masks, no weights.
Tensor attend(const MultiheadAttention& attention, const Tensor& x, const Tensor& source, const Tensor& mask,
              const Tensor& padding, bool is_causal) {
  return std::get<0>(attention->forward(
      x, source, source,
      {.key_padding_mask = padding, .need_weights = false, .attn_mask = mask, .is_causal = is_causal}));
}

}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead,
                                                         TransformerLayerOptions options, Where where)
    : Module("TransformerEncoderLayer"), d_model_(d_model), nhead_(nhead), options_(options) {
  CallSiteScope site(where);
  check_layer_arguments("TransformerEncoderLayer", d_model, nhead, options);
  // PyTorch's order of construction (and so of parameters and initialisation draws).
  self_attn = register_module("self_attn", make_attention(d_model, nhead, options));
  linear1 = register_module("linear1", make_linear(d_model, options.dim_feedforward, options));
  dropout = register_module("dropout", Dropout(options.dropout));
  linear2 = register_module("linear2", make_linear(options.dim_feedforward, d_model, options));
  norm1 = register_module("norm1", make_norm(d_model, options));
  norm2 = register_module("norm2", make_norm(d_model, options));
  dropout1 = register_module("dropout1", Dropout(options.dropout));
  dropout2 = register_module("dropout2", Dropout(options.dropout));
  options_.generator = nullptr;  // used while building only: not kept, so it is never read after it is gone
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const TransformerEncoderForwardOptions& options,
                                            Where where) {
  CallSiteScope site(where);
  const auto self_block = [&](const Tensor& x) {
    return dropout1(attend(self_attn, x, x, options.src_mask, options.src_key_padding_mask, options.is_causal));
  };
  const auto feed_forward_block = [&](const Tensor& x) {
    return dropout2(feed_forward(linear1, linear2, dropout, options_.activation, x));
  };
  Tensor x = src;
  if (options_.norm_first) {
    x = add(x, self_block(norm1(x)));
    return add(x, feed_forward_block(norm2(x)));
  }
  x = norm1(add(x, self_block(x)));
  return norm2(add(x, feed_forward_block(x)));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead,
                                                         TransformerLayerOptions options, Where where)
    : Module("TransformerDecoderLayer"), d_model_(d_model), nhead_(nhead), options_(options) {
  CallSiteScope site(where);
  check_layer_arguments("TransformerDecoderLayer", d_model, nhead, options);
  self_attn = register_module("self_attn", make_attention(d_model, nhead, options));
  multihead_attn = register_module("multihead_attn", make_attention(d_model, nhead, options));
  linear1 = register_module("linear1", make_linear(d_model, options.dim_feedforward, options));
  dropout = register_module("dropout", Dropout(options.dropout));
  linear2 = register_module("linear2", make_linear(options.dim_feedforward, d_model, options));
  norm1 = register_module("norm1", make_norm(d_model, options));
  norm2 = register_module("norm2", make_norm(d_model, options));
  norm3 = register_module("norm3", make_norm(d_model, options));
  dropout1 = register_module("dropout1", Dropout(options.dropout));
  dropout2 = register_module("dropout2", Dropout(options.dropout));
  dropout3 = register_module("dropout3", Dropout(options.dropout));
  options_.generator = nullptr;  // used while building only
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory,
                                            const TransformerDecoderForwardOptions& options, Where where) {
  CallSiteScope site(where);
  const auto self_block = [&](const Tensor& x) {
    return dropout1(attend(self_attn, x, x, options.tgt_mask, options.tgt_key_padding_mask, options.tgt_is_causal));
  };
  const auto memory_block = [&](const Tensor& x) {
    return dropout2(attend(multihead_attn, x, memory, options.memory_mask, options.memory_key_padding_mask,
                           options.memory_is_causal));
  };
  const auto feed_forward_block = [&](const Tensor& x) {
    return dropout3(feed_forward(linear1, linear2, dropout, options_.activation, x));
  };
  Tensor x = tgt;
  if (options_.norm_first) {
    x = add(x, self_block(norm1(x)));
    x = add(x, memory_block(norm2(x)));
    return add(x, feed_forward_block(norm3(x)));
  }
  x = norm1(add(x, self_block(x)));
  x = norm2(add(x, memory_block(x)));
  return norm3(add(x, feed_forward_block(x)));
}

}  // namespace ember::nn
