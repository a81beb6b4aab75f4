// Host-side entry points of the CUDA softmax kernels (softmax.cu, softmax_backward.cu). The op
// file lays the tensor out densely as [outer, length, inner] (reduce.h's ReduceLayout, with
// `reduce` the softmax dim's length): element (o, r, i) sits at (o * length + r) * inner + i.
#pragma once

#include <cstdint>

#include "kernels/cuda/reduce.h"

namespace ember::cuda {

// output = softmax (or log_softmax when `log`) of input along the layout's middle dim.
int launch_softmax(bool log, DType dtype, const void* input, void* output, const ReduceLayout& layout);

// grad_input from the forward output y and the upstream grad g, all dense in the layout:
//   softmax:     y * (g - sum(g * y));   log_softmax: g - exp(y) * sum(g).
int launch_softmax_backward(bool log, DType dtype, const void* grad, const void* output, void* grad_input,
                            const ReduceLayout& layout);

}  // namespace ember::cuda
