// Host-side entry points of the CUDA fused optimizer steps (kernels/cuda/optim.cu): one kernel
// pass per parameter updates it and its state with the functors of kernels/optim_functors.h, the
// same math as the CPU kernel. Plain C++ with no CUDA header.
#pragma once

#include <cstdint>

#include "kernels/cuda/elementwise.h"  // DType, kMaxDims

namespace ember::cuda {

constexpr int kMaxStepTensors = 5;

// The tensors of one step (param first), all of one shape and dtype, any strides. `contiguous`:
// every tensor is dense row-major, so the kernel indexes them flat.
struct StepTensors {
  int count = 0;
  void* data[kMaxStepTensors] = {};
  int64_t strides[kMaxStepTensors][kMaxDims] = {};
  int dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t numel = 0;
  bool contiguous = true;
};

struct SgdStepAttrs {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, first_step = false, maximize = false;
};

struct AdamStepAttrs {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  int64_t step = 1;
  bool amsgrad = false, decoupled = false, maximize = false;
};

// tensors: param, grad and (when momentum != 0) the momentum buffer. dtype: a floating type.
int launch_sgd_step(DType dtype, const StepTensors& tensors, const SgdStepAttrs& attrs, void* stream);
// tensors: param, grad, exp_avg, exp_avg_sq and (when amsgrad) max_exp_avg_sq.
int launch_adam_step(DType dtype, const StepTensors& tensors, const AdamStepAttrs& attrs, void* stream);

}  // namespace ember::cuda
