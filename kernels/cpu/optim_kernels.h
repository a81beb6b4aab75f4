// CPU kernels of the fused optimizer steps (sgd_step_, adam_step_): each walks a parameter, its
// gradient and its state once, applying the functor in kernels/optim_functors.h per element.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// inputs: param, grad, momentum_buffer (undefined when momentum == 0); writes param and buffer.
void sgd_step_kernel(const OpCall& call, TensorList& outputs);
// inputs: param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (undefined unless amsgrad);
// writes param and the state tensors.
void adam_step_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
