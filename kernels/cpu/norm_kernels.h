// CPU layer normalisation over the trailing `normalized_shape` dims: one row per leading index.
//   forward:  mean = E[x], rstd = 1 / sqrt(Var[x] + eps) (biased variance), y = (x - mean) * rstd * w + b
//   backward: xhat = (x - mean) * rstd, g = grad_y * w,
//             grad_x = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//             grad_w = sum over rows of grad_y * xhat, grad_b = sum over rows of grad_y
// Row statistics are accumulated in double; mean and rstd are float32 for 16-bit inputs.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// inputs: input, weight (or undefined), bias (or undefined); outputs: y, mean, rstd.
void layer_norm_kernel(const OpCall& call, TensorList& outputs);
// inputs: grad_y, input, mean, rstd, weight (or undefined); outputs: grad_input, grad_weight, grad_bias.
void layer_norm_backward_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
