// CPU kernels of softmax and log_softmax along a dim (attr dim) and of their backward ops,
// which take (grad, output) because both gradients are cheapest written with the forward output:
//   softmax_backward:     grad_input = y * (grad - sum(grad * y))
//   log_softmax_backward: grad_input = grad - exp(y) * sum(grad)
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

void softmax_kernel(const OpCall& call, TensorList& outputs);
void log_softmax_kernel(const OpCall& call, TensorList& outputs);
void softmax_backward_kernel(const OpCall& call, TensorList& outputs);
void log_softmax_backward_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
