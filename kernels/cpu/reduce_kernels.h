// CPU kernels of the reductions: sum, mean, amax, amin, prod, any, all (reduce_kernels.cpp) and var, argmax,
// argmin and the amax/amin gradient (reduce_stats_kernels.cpp). Attributes as in
// runtime/functional.h: dims (empty = all), keepdim, correction, dim.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

void sum_kernel(const OpCall& call, TensorList& outputs);
void mean_kernel(const OpCall& call, TensorList& outputs);
void amax_kernel(const OpCall& call, TensorList& outputs);
void amin_kernel(const OpCall& call, TensorList& outputs);
// prod multiplies like sum adds (double for floating inputs, wrapping int64 for the others);
// any / all give bool for every input dtype.
void prod_kernel(const OpCall& call, TensorList& outputs);
void any_kernel(const OpCall& call, TensorList& outputs);
void all_kernel(const OpCall& call, TensorList& outputs);

void var_kernel(const OpCall& call, TensorList& outputs);
void argmax_kernel(const OpCall& call, TensorList& outputs);
void argmin_kernel(const OpCall& call, TensorList& outputs);
// extremum_backward(grad, input, result; dims, keepdim): grad spread evenly over the elements
// equal to the reduced result (the gradient of amax and amin).
void extremum_backward_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
