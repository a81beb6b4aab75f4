// scaled_dot_product_attention in the order of PyTorch's _scaled_dot_product_attention_math:
// 16-bit operands taken in float32, q and k each scaled by sqrt(|scale|), the mask applied, a
// softmax that leaves a row of nothing but -inf at 0 (masked or not, as PyTorch's
// _safe_softmax), dropout, the product with v, and the result rounded back once.
#include "runtime/functional_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/autocast.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_shape_ops.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

constexpr const char* kFunction = "scaled_dot_product_attention";

// Whether the batch dims (all but the last two) of query, key and value broadcast together.
bool batches_broadcast(const Tensor& query, const Tensor& key, const Tensor& value) {
  const int rank = std::max({query.dim(), key.dim(), value.dim()});
  for (int back = 3; back <= rank; ++back) {  // dim -back of each, where it has one
    int64_t common = 1;
    for (const Tensor* tensor : {&query, &key, &value}) {
      if (tensor->dim() < back) continue;
      const int64_t size = tensor->size(tensor->dim() - back);
      if (size == 1) continue;
      if (common != 1 && size != common) return false;
      common = size;
    }
  }
  return true;
}

// With enable_gqa, key and value of fewer heads (dim -3) than the query, a divisor of its count,
// repeat each head for that many consecutive query heads (PyTorch's repeat_interleave): a view
// [..., H, 1, S, E] expanded to [..., H, g, S, E], then merged into [..., H g, S, E].
Tensor repeat_heads(const Tensor& t, const Tensor& query, const char* name) {
  check(query.dim() >= 3 && t.dim() >= 3,
        "{}: enable_gqa needs a heads dim (-3) in query and {}, got shapes {} and {}", kFunction, name,
        query.sizes(), t.sizes());
  const int64_t query_heads = query.size(-3), heads = t.size(-3);
  check(heads > 0 && query_heads % heads == 0,
        "{}: with enable_gqa the number of heads (dim -3) of {} must divide the query's, got {} and {}", kFunction,
        name, heads, query_heads);
  if (heads == query_heads) return t;
  Dims expanded = t.sizes();
  expanded.insert(expanded.size() - 2, query_heads / heads);
  Dims merged = t.sizes();
  merged[merged.size() - 3] = query_heads;
  return t.unsqueeze(-3).expand(expanded).reshape(merged);
}

void check_operands(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                    double dropout_p, bool is_causal) {
  for (const auto& [name, tensor] : {std::pair{"query", &query}, std::pair{"key", &key}, std::pair{"value", &value}})
    check(tensor->defined() && tensor->dim() >= 2 && is_floating(tensor->dtype()),
          "{}: {} must be a floating tensor of at least 2 dims ([..., length, features]), got {}", kFunction, name,
          tensor->defined() ? fmt::format("{} of shape {}", tensor->dtype(), tensor->sizes()) : "an undefined tensor");
  check(query.dtype() == key.dtype() && key.dtype() == value.dtype(),
        "{}: query, key and value must have one dtype, got {}, {} and {}", kFunction, query.dtype(), key.dtype(),
        value.dtype());
  check(query.size(-1) == key.size(-1),
        "{}: query and key must have the same feature size (last dim), got shapes {} and {}", kFunction,
        query.sizes(), key.sizes());
  check(key.size(-2) == value.size(-2),
        "{}: key and value must have the same length (dim -2), got shapes {} and {}", kFunction, key.sizes(),
        value.sizes());
  check(batches_broadcast(query, key, value),
        "{}: the batch dims (all but the last two) of query {}, key {} and value {} do not broadcast", kFunction,
        query.sizes(), key.sizes(), value.sizes());
  check(dropout_p >= 0.0 && dropout_p <= 1.0, "{}: dropout_p must be in [0, 1], got {}", kFunction, dropout_p);
  check(!(is_causal && attn_mask.defined()),
        "{}: is_causal and attn_mask cannot both be given (attn_mask of shape {})", kFunction,
        attn_mask.defined() ? attn_mask.sizes() : Dims{});
  // PyTorch's rule: a float mask is float32 or the query's dtype.
  if (attn_mask.defined())
    check(attn_mask.dtype() == kBool || attn_mask.dtype() == kFloat32 || attn_mask.dtype() == query.dtype(),
          "{}: attn_mask must be bool (true = attend), float32 or of the query's dtype {} (added to the scores), "
          "got {}",
          kFunction, query.dtype(), attn_mask.dtype());
}

// Position (i, j) of [L, S] may attend where j <= i.
Tensor causal_mask(int64_t query_length, int64_t key_length, Device device) {
  const Tensor rows = arange(static_cast<double>(query_length), {.dtype = kInt64, .device = device});
  const Tensor columns = arange(static_cast<double>(key_length), {.dtype = kInt64, .device = device});
  return ge(rows.reshape({query_length, 1}), columns.reshape({1, key_length}));
}

// softmax over the last dim, with a row of nothing but -inf giving zeros (PyTorch's
// _safe_softmax). The row's scores are replaced by zeros before the softmax, so its backward sees
// finite values and passes zero gradient instead of NaN.
Tensor safe_softmax(const Tensor& scores) {
  const Tensor minus_infinity = scalar_like(-std::numeric_limits<double>::infinity(), scores);
  const Tensor empty_row = all(eq(scores, minus_infinity), -1, true);
  const Tensor zero = scalar_like(0.0, scores);
  const Tensor weights = softmax(ember::where(empty_row, zero, scores), -1);
  return ember::where(empty_row, scalar_like(0.0, weights), weights);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa, Where where) {
  CallSiteScope site(where);
  if (enable_gqa) {
    check(query.defined() && key.defined() && value.defined(), "{}: query, key and value must be defined", kFunction);
    const Tensor grouped_key = repeat_heads(key, query, "key");  // key first: its error comes first
    const Tensor grouped_value = repeat_heads(value, query, "value");
    return scaled_dot_product_attention(query, grouped_key, grouped_value, attn_mask, dropout_p, is_causal, scale,
                                        false, where);
  }
  check_operands(query, key, value, attn_mask, dropout_p, is_causal);
  // Under autocast the op is on PyTorch's lower-precision list: float32 operands (a float mask
  // too) go to the autocast dtype first. Inside, autocast is off, as PyTorch's kernel runs below it.
  const bool lowered = autocast_enabled() && query.dtype() != kFloat64;
  const auto lower = [&](const Tensor& t) {
    return lowered && t.defined() && is_floating(t.dtype()) ? to_dtype(t, autocast_dtype()) : t;
  };
  const Tensor q_in = lower(query), k_in = lower(key), v_in = lower(value), mask = lower(attn_mask);
  AutocastGuard autocast_off(kBFloat16, false);
  // 16-bit operands are computed in float32 and the result rounded once, as PyTorch's math path.
  const DType origin = q_in.dtype();
  const DType compute = origin == kBFloat16 || origin == kFloat16 ? kFloat32 : origin;
  const Tensor q = to_dtype(q_in, compute), k = to_dtype(k_in, compute), v = to_dtype(v_in, compute);
  // q and k each take sqrt(|scale|), q with the scale's sign, as PyTorch's math path.
  const double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  const double root = std::sqrt(std::abs(factor));
  Tensor scores = matmul(mul(q, factor < 0.0 ? -root : root), transpose(mul(k, root), -2, -1));
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    scores = masked_fill(scores, logical_not(causal_mask(query.size(-2), key.size(-2), query.device())),
                         minus_infinity);
  } else if (mask.defined()) {
    const Dims shape = broadcast_shapes(mask.sizes(), scores.sizes(), kFunction);
    check(shape == scores.sizes(), "{}: attn_mask of shape {} does not broadcast to the scores' shape {}", kFunction,
          mask.sizes(), scores.sizes());
    scores = mask.dtype() == kBool ? masked_fill(scores, logical_not(mask), minus_infinity) : add(scores, mask);
  }
  Tensor weights = safe_softmax(scores);
  if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true);
  return to_dtype(matmul(weights, v), origin);
}

}  // namespace ember
