// Autocast for composites of registry ops that are on PyTorch's autocast float32 list (l1_loss,
// smooth_l1_loss, huber_loss, kl_div, binary_cross_entropy(_with_logits), logsumexp, norm,
// cosine_similarity): they have no OpDef to carry an AutocastPolicy, so they cast their 16-bit
// inputs themselves, and every step of theirs runs in float32, not just the registry ops (exp,
// log, sum) inside them.
#pragma once

#include "runtime/tensor.h"

namespace ember::detail {

// Under autocast, a bf16/fp16 tensor cast to float32 by a dispatched to_dtype (autograd records it,
// so gradients return in 16 bits); otherwise, and for an undefined tensor, the tensor itself.
Tensor autocast_to_float32(const Tensor& tensor);

}  // namespace ember::detail
