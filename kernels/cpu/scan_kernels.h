// CPU kernels of the running reductions along one dim (scan_kernels.cpp). Attributes as in
// runtime/ops/scan_ops.cpp: dim, and reverse for cumsum and logcumsumexp.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// Each 1-D slice along dim is scanned in order (from its end when reverse) by one thread, so the
// results do not depend on the thread count, and the CUDA kernels (kernels/cuda/scan.h) take the
// same steps. Floating inputs accumulate in double and keep their dtype; integers and bool
// accumulate in int64 (wrapping, like PyTorch).
void cumsum_kernel(const OpCall& call, TensorList& outputs);
void cumprod_kernel(const OpCall& call, TensorList& outputs);
// Two outputs: the running extremum (the input's dtype, every dtype) and its int64 index
// (fn::RunningExtremumReplaces: ties take the later index, NaN is carried).
void cummax_kernel(const OpCall& call, TensorList& outputs);
void cummin_kernel(const OpCall& call, TensorList& outputs);
// Floating inputs only (the shape rule refuses others): a running fn::LogAddExp in double.
void logcumsumexp_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
