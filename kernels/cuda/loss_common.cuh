// Device pieces shared by the class-index loss kernels: target lookup and validation, the
// gradient scale of a row, and the fixed-order final sum / mean of per-row losses.
#pragma once

#include "kernels/cuda/device_error.cuh"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/reduce_common.cuh"

namespace ember::cuda::detail {

constexpr int64_t kReductionNone = 0;
constexpr int64_t kReductionMean = 1;
constexpr int kLossBlock = 256;

// The target of `row`, or -1 when ignored, or -2 when out of range (the row's result is NaN and
// the target is reported).
__device__ __forceinline__ int64_t target_of(const ClassLossArgs& args, int64_t row) {
  const int64_t target = args.target[row * args.target_stride];
  if (target == args.ignore_index) return -1;
  if (target >= 0 && target < args.classes) return target;
  device::report_error(args.error, target, args.classes, row);
  return -2;
}

// The kernels are in an unnamed namespace: each .cu file gets its own copy, never a duplicate.
namespace {

// Per-row losses (double, in row order) -> output[0], summed in a fixed tree by one block.
template <typename T>
__global__ void __launch_bounds__(kLossBlock) finish_class_loss(ClassLossArgs args, const double* row_losses, T* output) {
  double total = 0.0;
  int64_t counted = 0;
  for (int64_t row = threadIdx.x; row < args.rows; row += kLossBlock) {
    total += row_losses[row];
    counted += args.target[row * args.target_stride] != args.ignore_index;
  }
  total = block_all_reduce<kLossBlock>(total, AddOp{});
  counted = block_all_reduce<kLossBlock>(counted, AddOp{});
  // mean over no counted targets is 0/0 = NaN, like the CPU op and PyTorch.
  if (threadIdx.x == 0)
    output[0] = to_output<T>(args.reduction == kReductionMean ? total / static_cast<double>(counted) : total);
}

// counted[0] = targets that are not ignored (the divisor of a mean loss's gradient).
__global__ void __launch_bounds__(kLossBlock) count_targets(ClassLossArgs args, int64_t* counted) {
  int64_t count = 0;
  for (int64_t row = threadIdx.x; row < args.rows; row += kLossBlock)
    count += args.target[row * args.target_stride] != args.ignore_index;
  count = block_all_reduce<kLossBlock>(count, AddOp{});
  if (threadIdx.x == 0) counted[0] = count;
}

}  // namespace

// The upstream gradient of `row`, divided by the counted targets for mean.
template <typename T, typename C>
__device__ __forceinline__ C grad_scale_of(const ClassLossArgs& args, const T* grad, int64_t grad_stride,
                                           const int64_t* counted, int64_t row) {
  const C value = load(grad, row * grad_stride);
  return args.reduction == kReductionMean ? value / static_cast<C>(counted[0]) : value;
}

// Layout of the class-loss scratch: rows doubles of per-row losses, then one int64 count.
inline double* row_losses_of(void* scratch) { return static_cast<double*>(scratch); }
inline int64_t* counted_of(void* scratch, const ClassLossArgs& args) {
  return reinterpret_cast<int64_t*>(static_cast<double*>(scratch) + args.rows);
}

}  // namespace ember::cuda::detail
