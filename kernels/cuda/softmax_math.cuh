// exp in the compute type (float or double) for the softmax and loss kernels (their sums and logs
// are double), and the row-length thresholds that pick a warp-per-row or a block-per-row kernel.
#pragma once

#include <cmath>
#include <limits>

namespace ember::cuda::detail {

template <typename C> __device__ __forceinline__ C exp_of(C value) {
  if constexpr (sizeof(C) == sizeof(float)) {
    return expf(value);
  } else {
    return exp(value);
  }
}

template <typename C> __device__ __forceinline__ C negative_infinity() { return -std::numeric_limits<C>::infinity(); }

constexpr int kRowBlock = 256;         // threads per block of every row kernel
constexpr int kWarpsPerBlock = kRowBlock / 32;
constexpr int64_t kShortRow = 128;     // rows up to this long: 4 values per lane in registers
constexpr int64_t kWarpRow = 1024;     // rows up to this long: 32 values per lane in registers

}  // namespace ember::cuda::detail
