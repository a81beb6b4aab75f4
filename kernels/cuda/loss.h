// Host-side entry points of the CUDA loss kernels: cross_entropy and its backward
// (loss_cross_entropy.cu), nll_loss, its backward and mse_loss (loss_nll_mse.cu). Attributes as
// in runtime/functional.h: reduction 0 none / 1 mean / 2 sum, ignore_index, label_smoothing.
// Targets are validated on the device: a target outside [0, classes) that is not ignore_index
// makes its loss (and gradient row) NaN and is written to the device's error record
// (kernels/cuda/device_error.h), which the host raises as an error at its next synchronization:
// throwing right away would need a host sync per loss.
#pragma once

#include <cstdint>

#include "kernels/class_loss_layout.h"
#include "kernels/cuda/device_error.h"
#include "kernels/cuda/elementwise.h"

namespace ember::cuda {

// Scores (logits or log-probabilities) [rows, classes] with any strides, int64 targets [rows]:
// the layout the CPU kernels read (kernels/class_loss_layout.h), plus the device's own fields.
struct ClassLossArgs : ClassLossLayout {
  const void* scores = nullptr;
  void* stream = nullptr;  // cudaStream_t
  IndexFlag error;         // where a bad target is reported
};

// Device scratch for the class losses: per-row losses and the count of counted targets.
int64_t class_loss_scratch_bytes(const ClassLossArgs& args);

// output: [rows] per-row losses for reduction none, else one element; dtype `dtype`.
int launch_cross_entropy(DType dtype, const ClassLossArgs& args, void* output, void* scratch);
int launch_nll_loss(DType dtype, const ClassLossArgs& args, void* output, void* scratch);

// grad_scores: dense [rows, classes]. grad: the loss's upstream gradient, element row at
// row * grad_stride (stride 0 for a scalar loss).
int launch_cross_entropy_backward(DType dtype, const ClassLossArgs& args, const void* grad, int64_t grad_stride,
                                  void* grad_scores, void* scratch);
int launch_nll_loss_backward(DType dtype, const ClassLossArgs& args, const void* grad, int64_t grad_stride,
                             void* grad_scores, void* scratch);

// mse_loss: (input - target)^2 over `shape` (operands broadcast to it), kept for reduction none,
// else summed (and divided by shape.numel for mean) into one element.
int64_t mse_loss_scratch_bytes(const LaunchShape& shape);
int launch_mse_loss(DType dtype, int64_t reduction, const StridedOperand& input, const StridedOperand& target,
                    const LaunchShape& shape, void* output, void* scratch);

}  // namespace ember::cuda
