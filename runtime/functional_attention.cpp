// scaled_dot_product_attention in the order of PyTorch's _scaled_dot_product_attention_math:
// q and k each scaled by sqrt(scale) (which keeps q k^T from overflowing 16-bit types where the
// product alone would), the mask applied, a softmax that leaves a fully masked row at 0, dropout,
// and the product with v.
#include "runtime/functional_attention.h"

#include <cmath>
#include <limits>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_shape_ops.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

constexpr const char* kFunction = "scaled_dot_product_attention";

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
  check(dropout_p >= 0.0 && dropout_p < 1.0, "{}: dropout_p must be in [0, 1), got {}", kFunction, dropout_p);
  check(!(is_causal && attn_mask.defined()),
        "{}: is_causal and attn_mask cannot both be given (attn_mask of shape {})", kFunction,
        attn_mask.defined() ? attn_mask.sizes() : Dims{});
  // As PyTorch: a floating mask in another dtype than the query's would change the result's dtype.
  if (attn_mask.defined())
    check(attn_mask.dtype() == kBool || attn_mask.dtype() == query.dtype(),
          "{}: attn_mask must be bool (true = attend) or of the query's dtype {} (added to the scores), got {}",
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
                                    std::optional<double> scale, Where where) {
  CallSiteScope site(where);
  check_operands(query, key, value, attn_mask, dropout_p, is_causal);
  const double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  const double root = std::sqrt(factor);
  Tensor scores = matmul(mul(query, root), transpose(mul(key, root), -2, -1));
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  bool masked = false;
  if (is_causal) {
    scores = masked_fill(scores, logical_not(causal_mask(query.size(-2), key.size(-2), query.device())),
                         minus_infinity);
    masked = true;
  } else if (attn_mask.defined()) {
    const Dims shape = broadcast_shapes(attn_mask.sizes(), scores.sizes(), kFunction);
    check(shape == scores.sizes(), "{}: attn_mask of shape {} does not broadcast to the scores' shape {}", kFunction,
          attn_mask.sizes(), scores.sizes());
    scores = attn_mask.dtype() == kBool ? masked_fill(scores, logical_not(attn_mask), minus_infinity)
                                        : add(scores, attn_mask);
    masked = true;
  }
  // Without a mask no row can be all -inf but by overflow, which PyTorch's softmax also leaves NaN.
  Tensor weights = masked ? safe_softmax(scores) : softmax(scores, -1);
  if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true);
  return matmul(weights, value);
}

}  // namespace ember
