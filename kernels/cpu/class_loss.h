// What the class-index losses (cross_entropy, nll_loss and their backward kernels) share: the
// call's geometry and attributes, validated targets, and the gradient's per-row scale.
#pragma once

#include <cstdint>

#include "kernels/class_loss_layout.h"
#include "kernels/cpu/parallel_for.h"
#include "runtime/ops/registry.h"
#include "runtime/parallel.h"
#include "runtime/tensor.h"

namespace ember::cpu {

inline constexpr int64_t kReductionNone = 0;
inline constexpr int64_t kReductionMean = 1;

// Where a call's scores [N, C] (or [C]) and targets [N] (or 0-d) are, and its attributes; the
// CUDA kernels' arguments (runtime/cuda/loss_cuda_ops.cpp) start from it too.
ClassLossLayout class_loss_layout(const OpCall& call, const Tensor& scores, const Tensor& target);

// The layout, with every target checked on the host.
struct ClassLoss : ClassLossLayout {
  int64_t counted = 0;  // targets that are not ignored: the divisor of the mean

  bool ignored(int64_t row) const { return target[row * target_stride] == ignore_index; }
  int64_t target_of(int64_t row) const { return target[row * target_stride]; }
};

// Whether a call's rows are worth spreading over the threads (the same rule for every
// class-index loss kernel; the results never depend on it).
inline bool runs_in_parallel(const ClassLossLayout& loss) {
  return loss.rows * loss.classes >= kParallelGrain && get_num_threads() > 1;
}

// class_loss_layout, then every target checked (serially: an error must not be thrown from
// inside an OpenMP region); the error names cross_entropy or nll_loss, as the call was.
ClassLoss class_loss(const OpCall& call, const Tensor& scores, const Tensor& target);

// The gradient's scale for a row: its own grad (reduction none), or the scalar grad, divided by
// the number of counted targets for mean.
template <typename T>
struct GradScale {
  const T* grad;
  int64_t stride;
  const ClassLoss& loss;
  double operator()(int64_t row) const {
    const double value = static_cast<double>(static_cast<compute_t<T>>(grad[row * stride]));
    return loss.reduction == kReductionMean ? value / static_cast<double>(loss.counted) : value;
  }
};
template <typename T>
GradScale<T> grad_scale(const Tensor& grad, const ClassLoss& loss) {
  const int64_t stride = loss.reduction == kReductionNone && grad.dim() == 1 ? grad.strides()[0] : 0;
  return {grad.data_ptr<T>(), stride, loss};
}

}  // namespace ember::cpu
