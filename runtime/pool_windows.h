// The pieces pooling (functional_pool.cpp, functional_pool_adaptive.cpp) is built from: the input's
// batch dim, one dim's windows gathered with index_select, and PyTorch's choice of a window's
// maximum. Every index is computed on the device from arange, so a capture records it.
#pragma once

#include <cstdint>

#include "runtime/tensor.h"

namespace ember::detail {

// The input with a batch dim: [N, C, S...] as it is, [C, S...] (unbatched) with N = 1. Checks the
// rank (spatial + 1 or + 2) and that no dim but N is empty, as PyTorch's pool shape checks.
struct BatchedInput {
  Tensor tensor;
  bool unbatched = false;
};
BatchedInput batched_pool_input(const Tensor& input, int spatial, const char* op);
// The result without its batch dim again where the input had none.
Tensor unbatched_like(const BatchedInput& input, const Tensor& result);

// An int64 vector on `device` from arange: 0, 1, ..., count - 1.
Tensor int64_range(int64_t count, Device device);
// An int64 scalar on `device`, so integer arithmetic stays integer.
Tensor int64_scalar(int64_t value, Device device);

// index_select along `dim` at `positions` (1-D, k-major: position[k * count + o]) with that dim
// then split into (kernel, count): [..., S, ...] -> [..., kernel, count, ...].
Tensor gather_windows(const Tensor& input, int dim, const Tensor& positions, int64_t kernel, int64_t count);

// The lowest value of a dtype: -inf for floating ones, the minimum for integers. Max pooling pads
// with it.
double lowest_value(DType dtype);

// The flat position of each element within its input plane, [1, 1, S...] int64 (row-major over
// the spatial dims): max pooling carries it through the same gathers as the values.
Tensor plane_positions(const Dims& spatial_sizes, Device device);

// PyTorch's choice in each window of `windows` ([..., K, O, ...], K at `dim`): its maximum, the
// first one on ties and the last NaN when there is one; where the maximum is the lowest value
// (nothing beats PyTorch's starting value) the window's element number `start[o]` (int64 [O]),
// which PyTorch's kernels start from. Returns the chosen element's value (the gradient reaches it
// alone) and the same element of `positions` (int64, `windows`' shape or broadcastable to it;
// undefined for none).
struct WindowMax {
  Tensor values;
  Tensor positions;
};
WindowMax window_max(const Tensor& windows, const Tensor& positions, int dim, const Tensor& start);

}  // namespace ember::detail
