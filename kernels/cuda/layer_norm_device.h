// Device helpers shared by the layer_norm kernels (included only by kernels/cuda/layer_norm_*.cu):
// the accumulation type per dtype, the floating-dtype switch, and deterministic warp and block sums.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/half_types.h"

namespace ember::cuda::layer_norm_detail {

// The statistics (mean, rstd) are float32 for 16-bit floats and float32, float64 for float64; the
// row sums behind them (forward and backward) and the column sums are double.
template <typename T> struct Accumulate { using type = float; };
template <> struct Accumulate<double> { using type = double; };
template <typename T> using acc_t = typename Accumulate<T>::type;

// The floating-dtype switch every CUDA kernel file uses (cudaErrorInvalidValue for other dtypes,
// which the op file has already rejected).
using detail::dispatch_floating;

__device__ __forceinline__ double reciprocal_sqrt(double value) { return 1.0 / sqrt(value); }

// Butterfly sum over the 32 lanes: every lane ends with the same total, added in the same order
// on every run.
template <typename Acc> __device__ __forceinline__ Acc warp_sum(Acc value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Sum over a one-dimensional block whose size is a multiple of 32 (at most 1024). `shared` holds
// 32 values. Every thread adds the per-warp totals in warp order itself, so all threads get the
// same, deterministic total without a second broadcast.
template <typename Acc> __device__ __forceinline__ Acc block_sum(Acc value, Acc* shared) {
  value = warp_sum(value);
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x / 32] = value;
  __syncthreads();
  Acc total = 0;
  const int warps = static_cast<int>(blockDim.x / 32);
  for (int warp = 0; warp < warps; ++warp) total += shared[warp];
  __syncthreads();  // `shared` may be reused by the caller's next sum
  return total;
}

// One row per warp: 4 warps per block. One row per block: 512 threads.
constexpr int kWarpsPerBlock = 4;
constexpr int kRowBlockThreads = 512;
// Grid-stride loops cover the rest when a launch would want more blocks than this.
constexpr int64_t kMaxBlocks = 65536;

inline unsigned capped_blocks(int64_t wanted) {
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted < kMaxBlocks ? wanted : kMaxBlocks));
}

}  // namespace ember::cuda::layer_norm_detail
