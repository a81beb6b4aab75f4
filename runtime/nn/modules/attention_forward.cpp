// nn::MultiheadAttention's forward in the order of PyTorch's nn.MultiheadAttention.forward and
// F.multi_head_attention_forward: the shape checks, the masks made float (-inf where a bool mask
// is true), the in-projection, bias_k / bias_v and the zero attention appended to the keys and
// values, the heads split, then either the explicit product (when the weights are wanted) or
// scaled_dot_product_attention, the heads joined and out_proj. Every step is an ember op, so
// autograd, CUDA, autocast and capture come with it.
#include "runtime/nn/modules/attention_forward.h"

#include <cmath>
#include <limits>

#include "runtime/functional.h"
#include "runtime/functional_attention.h"
#include "runtime/functional_shape_ops.h"

namespace ember::nn {

namespace {

constexpr const char* kModule = "MultiheadAttention";

// PyTorch's _mha_shape_check: 3-D inputs are a batch, 2-D ones a single sequence, and the masks
// must have the matching ranks. Returns whether the call is batched.
bool check_ranks(const Tensor& query, const Tensor& key, const Tensor& value,
                 const MultiheadAttentionForwardOptions& options, int64_t num_heads) {
  check(query.defined() && key.defined() && value.defined(), "{}: query, key and value must be defined", kModule);
  check(query.dim() == 2 || query.dim() == 3,
        "{}: query should be unbatched 2D or batched 3D tensor but received {}-D query tensor", kModule, query.dim());
  const bool batched = query.dim() == 3;
  check(key.dim() == query.dim() && value.dim() == query.dim(),
        "{}: for {} ({}-D) query, expected key and value to be {}-D but found {}-D and {}-D tensors respectively",
        kModule, batched ? "batched" : "unbatched", query.dim(), query.dim(), key.dim(), value.dim());
  const Tensor& padding = options.key_padding_mask;
  if (padding.defined())
    check(padding.dim() == query.dim() - 1,
          "{}: for {} ({}-D) query, expected key_padding_mask to be None or {}-D but found {}-D tensor instead",
          kModule, batched ? "batched" : "unbatched", query.dim(), query.dim() - 1, padding.dim());
  const Tensor& mask = options.attn_mask;
  if (mask.defined()) {
    check(mask.dim() == 2 || mask.dim() == 3,
          "{}: expected attn_mask to be None, 2-D or 3-D but found {}-D tensor instead", kModule, mask.dim());
    if (!batched && mask.dim() == 3)
      check(mask.size(0) == num_heads,
            "{}: for unbatched (2-D) query, expected a 3-D attn_mask of shape [num_heads={}, L, S], got shape {}",
            kModule, num_heads, mask.sizes());
  }
  return batched;
}

// PyTorch's _canonical_mask: a bool mask becomes a float one of the query's dtype with -inf where
// it is true (not attended), a float one is kept in its own dtype (scaled_dot_product_attention
// takes float32 or the query's; the two masks add with promotion).
Tensor canonical_mask(const Tensor& mask, const char* name, DType query_dtype) {
  if (!mask.defined()) return mask;
  if (mask.dtype() == kBool)
    return masked_fill(zeros(mask.sizes(), {.dtype = query_dtype, .device = mask.device()}), mask,
                       -std::numeric_limits<double>::infinity());
  check(is_floating(mask.dtype()), "{}: only bool and floating types of {} are supported, got {}", kModule, name,
        mask.dtype());
  return mask;
}

// One zero column appended to the last dim: the key added by bias_k or add_zero_attn is attended.
Tensor pad_last(const Tensor& mask) {
  if (!mask.defined()) return mask;
  Dims column = mask.sizes();
  column[column.size() - 1] = 1;
  return cat({mask, zeros(column, {.dtype = mask.dtype(), .device = mask.device()})}, -1);
}

Tensor rows(const Tensor& t, int64_t index, int64_t count) {
  return t.defined() ? slice(t, 0, index * count, (index + 1) * count) : t;
}

// q, k, v [L or S, N, E]: one GEMM for self-attention (query, key and value the same tensor, as
// PyTorch's packed path), else one per input with its rows of in_proj_weight or its own weight.
std::tuple<Tensor, Tensor, Tensor> project(const AttentionLayer& layer, const Tensor& query, const Tensor& key,
                                           const Tensor& value, bool self_attention) {
  const int64_t E = layer.embed_dim;
  const Tensor& packed = layer.in_proj_weight;
  if (packed.defined() && self_attention) {
    const Tensor qkv = linear(query, packed, layer.in_proj_bias);
    return {slice(qkv, -1, 0, E), slice(qkv, -1, E, 2 * E), slice(qkv, -1, 2 * E, 3 * E)};
  }
  const Tensor& bias = layer.in_proj_bias;
  return {linear(query, packed.defined() ? rows(packed, 0, E) : layer.q_proj_weight, rows(bias, 0, E)),
          linear(key, packed.defined() ? rows(packed, 1, E) : layer.k_proj_weight, rows(bias, 1, E)),
          linear(value, packed.defined() ? rows(packed, 2, E) : layer.v_proj_weight, rows(bias, 2, E))};
}

// The asserts of multi_head_attention_forward, on [L, N, E] inputs, with the user's shapes.
void check_shapes(const AttentionLayer& layer, const Tensor& query, const Tensor& key, const Tensor& value,
                  const Tensor& padding, const Tensor& mask) {
  const int64_t L = query.size(0), N = query.size(1), S = key.size(0);
  check(query.size(2) == layer.embed_dim, "{}: was expecting embedding dimension of {}, but got {}", kModule,
        layer.embed_dim, query.size(2));
  check(key.size(0) == value.size(0) && key.size(1) == value.size(1),
        "{}: key's sequence and batch dims {} do not match value's {}", kModule, key.sizes(), value.sizes());
  check(key.size(1) == N, "{}: key and value have a batch of {}, the query {}", kModule, key.size(1), N);
  check(key.size(2) == layer.kdim && value.size(2) == layer.vdim,
        "{}: expected key and value of {} and {} features (kdim, vdim), got {} and {}", kModule, layer.kdim, layer.vdim,
        key.size(2), value.size(2));
  if (padding.defined())
    check(padding.size(0) == N && padding.size(1) == S, "{}: expecting key_padding_mask shape of [{}, {}], but got {}",
          kModule, N, S, padding.sizes());
  if (mask.defined()) {
    const Dims expected = mask.dim() == 2 ? Dims{L, S} : Dims{N * layer.num_heads, L, S};
    check(mask.sizes() == expected, "{}: the shape of the {}-D attn_mask is {}, but should be {}", kModule, mask.dim(),
          mask.sizes(), expected);
  }
}

}  // namespace

std::tuple<Tensor, Tensor> multihead_attention(const AttentionLayer& layer, const Tensor& query, const Tensor& key,
                                               const Tensor& value, const MultiheadAttentionForwardOptions& options) {
  const bool batched = check_ranks(query, key, value, options, layer.num_heads);
  const bool self_attention = query.is_same(key) && key.is_same(value);
  // Everything below works on [L, N, E]: batch_first inputs are transposed, a single sequence
  // gets a batch of one.
  Tensor q = query, k = key, v = value, padding = options.key_padding_mask;
  if (batched && layer.batch_first) {
    q = transpose(q, 0, 1), k = transpose(k, 0, 1), v = transpose(v, 0, 1);
  } else if (!batched) {
    q = unsqueeze(q, 1), k = unsqueeze(k, 1), v = unsqueeze(v, 1);
    if (padding.defined()) padding = unsqueeze(padding, 0);
  }
  check_shapes(layer, q, k, v, padding, options.attn_mask);
  check(!options.is_causal || options.attn_mask.defined(),
        "{}: need attn_mask if specifying the is_causal hint (it only says that attn_mask is the causal mask)",
        kModule);
  padding = canonical_mask(padding, "key_padding_mask", query.dtype());
  // With no padding mask and no weights wanted, the causal hint lets scaled_dot_product_attention
  // build the mask itself; otherwise the given mask is used (and merged with the padding).
  bool is_causal = options.is_causal;
  Tensor mask;
  if (!(is_causal && !padding.defined() && !options.need_weights)) {
    mask = canonical_mask(options.attn_mask, "attn_mask", query.dtype());
    if (mask.defined() && mask.dim() == 2) mask = unsqueeze(mask, 0);
    if (padding.defined()) is_causal = false;
  }

  const int64_t L = q.size(0), N = q.size(1), E = layer.embed_dim, H = layer.num_heads, D = E / H;
  auto [qp, kp, vp] = project(layer, q, k, v, self_attention);
  if (layer.bias_k.defined()) {  // PyTorch's bias_k.repeat(1, bsz, 1): one more key for every sequence
    kp = cat({kp, layer.bias_k.expand({1, N, E})}, 0);
    vp = cat({vp, layer.bias_v.expand({1, N, E})}, 0);
    mask = pad_last(mask), padding = pad_last(padding);
  }
  // Heads: [len, N, E] -> [N H, len, D], head h of sequence n at n H + h.
  Tensor qh = transpose(qp.reshape({L, N * H, D}), 0, 1);
  Tensor kh = transpose(kp.reshape({kp.size(0), N * H, D}), 0, 1);
  Tensor vh = transpose(vp.reshape({vp.size(0), N * H, D}), 0, 1);
  if (layer.add_zero_attn) {
    kh = cat({kh, zeros({N * H, 1, D}, {.dtype = kh.dtype(), .device = kh.device()})}, 1);
    vh = cat({vh, zeros({N * H, 1, D}, {.dtype = vh.dtype(), .device = vh.device()})}, 1);
    mask = pad_last(mask), padding = pad_last(padding);
  }
  const int64_t S = kh.size(1);
  if (padding.defined()) {  // [N, S] -> [N H, 1, S], added to the attention mask
    padding = padding.reshape({N, 1, 1, S}).expand({N, H, 1, S}).reshape({N * H, 1, S});
    mask = mask.defined() ? add(mask, padding) : padding;
  }

  Tensor output, weights;
  if (options.need_weights) {
    // PyTorch's explicit path: a plain softmax, so a row with every key masked is NaN, as there.
    Tensor scores = matmul(mul(qh, std::sqrt(1.0 / static_cast<double>(D))), transpose(kh, -2, -1));
    // baddbmm(mask, q, k^T); a float mask of another dtype is converted (PyTorch's baddbmm would
    // refuse the mismatch).
    if (mask.defined()) scores = add(to_dtype(mask, scores.dtype()), scores);
    weights = softmax(scores, -1);
    if (layer.dropout_p > 0.0) weights = dropout(weights, layer.dropout_p, true);
    output = transpose(matmul(weights, vh), 0, 1).reshape({L * N, E});
    weights = weights.reshape({N, H, L, S});
    if (options.average_attn_weights) weights = mean(weights, {1});
  } else {
    // [1, L, S] broadcasts over the batch and heads; [N H, L or 1, S] splits into [N, H, ., S].
    if (mask.defined()) mask = mask.size(0) == 1 ? unsqueeze(mask, 0) : mask.reshape({N, H, mask.size(1), S});
    const Tensor heads = scaled_dot_product_attention(qh.reshape({N, H, L, D}), kh.reshape({N, H, S, D}),
                                                      vh.reshape({N, H, S, D}), mask, layer.dropout_p, is_causal);
    output = permute(heads, {2, 0, 1, 3}).reshape({L * N, E});
  }
  output = linear(output, layer.out_proj_weight, layer.out_proj_bias).reshape({L, N, E});
  if (batched && layer.batch_first) output = transpose(output, 0, 1);
  if (!batched) {
    output = squeeze(output, 1);
    if (weights.defined()) weights = squeeze(weights, 0);
  }
  return {output, weights};
}

}  // namespace ember::nn
