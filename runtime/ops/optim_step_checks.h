// The argument checks of the fused optimizer steps (sgd_step_, adam_step_), shared by the CPU
// kernels in runtime/ops/optim_ops.cpp and the CUDA kernels in runtime/cuda/optim_cuda_ops.cpp so
// both devices reject the same calls with the same messages.
#pragma once

#include "runtime/ops/registry.h"

namespace ember {

// Defined inputs share the parameter's shape and dtype; the state the attributes need is present.
void check_sgd_step(const OpCall& call);
void check_adam_step(const OpCall& call);

}  // namespace ember
