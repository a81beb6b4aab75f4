// The argument checks of the fused optimizer steps (sgd_step_, adam_step_), shared by the CPU
// kernels in runtime/ops/optim_ops.cpp and the CUDA kernels in runtime/cuda/optim_cuda_ops.cpp so
// both devices reject the same calls with the same messages; and the steps' attributes, which the
// per-parameter and the multi-tensor ops share.
#pragma once

#include "runtime/ops/registry.h"
#include "runtime/optim/fused_steps.h"

namespace ember {

// Defined inputs share the parameter's shape and dtype; the state the attributes need is present.
void check_sgd_step(const OpCall& call);
void check_adam_step(const OpCall& call);

Attrs sgd_step_attrs(const optim::SgdStepArgs& args);
Attrs adam_step_attrs(const optim::AdamStepArgs& args);

}  // namespace ember
