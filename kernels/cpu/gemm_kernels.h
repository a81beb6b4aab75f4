// CPU kernels of matmul, mm, bmm and linear: they turn tensor shapes and strides into a
// GemmShape for kernels/cpu/gemm.h. The shape rules (runtime/ops/matmul_ops.cpp) have checked
// ranks, sizes and dtypes before these run.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// matmul with PyTorch semantics: 1-D operands gain and lose a dim, batch dims broadcast. mm and
// bmm are its 2-D and 3-D cases and use this kernel too.
void matmul_kernel(const OpCall& call, TensorList& outputs);

// linear(input [*, in], weight [out, in], bias [out] or undefined) -> [*, out] = x W^T + b.
void linear_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
