// Integer (int32, int64) matrix products on the CPU, for matmul / mm / bmm / linear.
#pragma once

#include "kernels/cpu/gemm.h"
#include "runtime/tensor.h"

namespace ember::cpu {

// out = a b (+ bias on every row), wrapping around in out's dtype as PyTorch's CPU products do.
// a, b and bias (if defined) are contiguous int64 tensors; `shape` describes a and b (its strides
// in elements) and out is contiguous [batch..., m, n].
void integer_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, const GemmShape& shape);

}  // namespace ember::cpu
