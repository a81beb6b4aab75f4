// The order sort, argsort, topk and kthvalue put a row in, written once for the CPU kernel
// (kernels/cpu/sort_kernels.cpp) and the CUDA kernel (kernels/cuda/sort.cu).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/reduce_functors.h"  // fn::is_nan

namespace ember::fn {

// Whether value a comes strictly before value b. NaN counts as larger than every number, as in
// PyTorch: last when ascending, first when descending. Equal values (and two NaNs, and -0.0 with
// 0.0) come in neither order; the caller breaks the tie by position.
template <typename T>
EMBER_HOST_DEVICE bool value_before(T a, T b, bool descending) {
  const bool a_nan = is_nan(a);
  const bool b_nan = is_nan(b);
  if (descending) return a > b || (a_nan && !b_nan);
  return a < b || (!a_nan && b_nan);
}

// The total order of (value, position) pairs: by value, ties by the earlier position. Sorting by
// it gives exactly a stable sort's result with any algorithm (a partial sort for topk, a bitonic
// network on the GPU), so every device returns the same indices.
template <typename T>
EMBER_HOST_DEVICE bool element_before(T a, int64_t a_position, T b, int64_t b_position, bool descending) {
  if (value_before(a, b, descending)) return true;
  if (value_before(b, a, descending)) return false;
  return a_position < b_position;
}

}  // namespace ember::fn
