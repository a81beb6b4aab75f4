// The CUDA optimizer launchers' hyperparameters (kernels/cuda/optim.h) read from an optimizer
// step op's attributes: one reader for the per-parameter ops (optim_cuda_ops.cpp) and the
// multi-tensor ops (multi_tensor_optim_cuda_ops.cpp), whose attributes are the same.
#pragma once

#include "kernels/cuda/optim.h"
#include "runtime/ops/attrs.h"

namespace ember::cuda {

SgdStepAttrs sgd_step_attrs_of(const Attrs& attrs);
AdamStepAttrs adam_step_attrs_of(const Attrs& attrs);

}  // namespace ember::cuda
