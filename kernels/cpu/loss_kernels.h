// CPU kernels of the losses. Attributes: reduction (int64: 0 none, 1 mean, 2 sum), ignore_index,
// label_smoothing (cross_entropy only). Class-index losses take logits or log-probabilities of
// shape [N, C] (or [C] with a 0-d target) and int64 targets.
//
// cross_entropy, per non-ignored row i with target t, smoothing e and C classes:
//   loss_i = (1 - e) (lse_i - z_it) + e/C (C lse_i - sum_c z_ic),  lse_i = log sum_c exp z_ic
// and its gradient: d loss_i / d z_ic = softmax_ic - (1 - e) [c == t] - e/C.
// mean divides by the number of non-ignored targets (PyTorch), so all-ignored gives NaN.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

void cross_entropy_kernel(const OpCall& call, TensorList& outputs);
void cross_entropy_backward_kernel(const OpCall& call, TensorList& outputs);  // (grad, logits, target)
// (grad, logits, target) -> (loss, grad_logits): the two above from one pass over the logits, each
// output bit-identical to its own op's. Compiled steps run it in place of the pair (graph/passes.h).
void cross_entropy_with_backward_kernel(const OpCall& call, TensorList& outputs);
void nll_loss_kernel(const OpCall& call, TensorList& outputs);
void nll_loss_backward_kernel(const OpCall& call, TensorList& outputs);  // (grad, log_probs, target)
void mse_loss_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
