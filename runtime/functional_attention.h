// scaled_dot_product_attention (torch.nn.functional's): softmax(q k^T scale + mask) v, as
// PyTorch 2's math path computes it, a composite of registry ops (so autograd, CUDA, autocast and
// capture come with it; runtime/functional_attention.cpp).
#pragma once

#include <optional>

#include "runtime/tensor.h"

namespace ember {

// query [..., L, E], key [..., S, E], value [..., S, Ev] -> [..., L, Ev]; the batch dims
// broadcast as matmul's. attn_mask (undefined: none) broadcasts to [..., L, S]: a bool mask
// keeps the positions that are true, a float one (float32 or the query's dtype) is added to the
// scores. is_causal masks position (i, j) for j > i (top-left aligned, as PyTorch's) and excludes
// attn_mask. scale defaults to 1 / sqrt(E) and may be negative. dropout_p in [0, 1] drops
// attention weights whenever it is above 0 (the functional form has no training flag, as in
// PyTorch). A query row whose scores are all -inf (every key masked) gets zero weights, and so a
// zero output with zero gradient, as PyTorch's _safe_softmax gives, rather than NaN. bfloat16 and
// float16 operands are computed in float32 and the result rounded once; under autocast, float32
// operands are first lowered to the autocast dtype (PyTorch's lower-precision list).
// enable_gqa (grouped-query attention): key and value may have fewer heads (dim -3) than the
// query, a divisor of its count; each of their heads then serves that many consecutive query
// heads (PyTorch's repeat_interleave along dim -3).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, bool enable_gqa = false,
                                    Where where = Where::current());

}  // namespace ember
