// Host-side entry point of the CUDA kernels of torch.special's pointwise functions
// (pointwise_special.cu; runtime/cuda/special_cuda_ops.cpp calls it). Plain C++, no CUDA header.
#pragma once

#include "kernels/cuda/elementwise.h"

namespace ember::cuda {

// Floating only (float32, float64, bfloat16, float16), like the CPU ops.
enum class SpecialUnaryOp : uint8_t { Lgamma, Digamma, Polygamma, Erfinv, I0, I0e, I1, I1e, Ndtri, LogNdtr, Erfcx };

// out = op(input) with input and out in `dtype`; `order` is polygamma's n (ignored by the others).
// Returns the launch's cudaError_t as an int (0 on success).
int launch_special_unary(SpecialUnaryOp op, int64_t order, DType dtype, void* out, const StridedOperand& input,
                         const LaunchShape& shape);

}  // namespace ember::cuda
