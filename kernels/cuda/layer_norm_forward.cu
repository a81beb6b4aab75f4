// ember's own layer_norm forward on CUDA. Rows of up to kLayerNormWarpMaxCols elements: one warp
// per row with the row held in registers; longer rows: one block per row reading the row three
// times (it stays in L1/L2). Both compute the mean first and then the centred variance (two
// passes, no E[x^2] - E[x]^2 cancellation) with fixed-order sums, so results are deterministic.
// As on the CPU the two sums and the statistics are double: a float sum of a row far from zero
// (x ~ 1e3 +- 1e-3) rounds its mean by more than the row's spread.
#include <cuda_runtime_api.h>

#include "kernels/cuda/layer_norm_device.h"

namespace ember::cuda {

namespace {

using namespace layer_norm_detail;

template <typename Acc>
__device__ __forceinline__ void write_statistics(Acc* mean_out, Acc* rstd_out, int64_t row, Acc mean, Acc rstd) {
  mean_out[row] = mean;
  rstd_out[row] = rstd;
}

// Normalized, scaled and shifted value of element `col` of a row, in the order the CPU kernel uses.
template <typename T, typename Acc>
__device__ __forceinline__ T normalized(Acc value, Acc mean, Acc rstd, const T* weight, const T* bias, int64_t col) {
  Acc result = (value - mean) * rstd;
  if (weight != nullptr) result *= static_cast<Acc>(weight[col]);
  if (bias != nullptr) result += static_cast<Acc>(bias[col]);
  return static_cast<T>(result);
}

// One warp per row; lane l holds elements l, l + 32, ... (coalesced), at most kItems of them.
template <typename T, int kItems>
__global__ void forward_warp_kernel(const T* input, const T* weight, const T* bias, T* output, acc_t<T>* mean_out,
                                    acc_t<T>* rstd_out, int64_t rows, int64_t cols, double eps) {
  using Acc = acc_t<T>;
  const int lane = static_cast<int>(threadIdx.x);
  const int64_t row_stride = int64_t{gridDim.x} * kWarpsPerBlock;
  for (int64_t row = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.y; row < rows; row += row_stride) {
    const T* x = input + row * cols;
    Acc values[kItems];
    double sum = 0;
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const int64_t col = lane + int64_t{item} * 32;
      values[item] = col < cols ? static_cast<Acc>(x[col]) : Acc(0);
      sum += static_cast<double>(values[item]);
    }
    sum = warp_sum(sum);
    const double row_mean = cols > 0 ? sum / static_cast<double>(cols) : 0.0;
    double squares = 0;
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const int64_t col = lane + int64_t{item} * 32;
      const double centred = static_cast<double>(values[item]) - row_mean;
      if (col < cols) squares += centred * centred;
    }
    squares = warp_sum(squares);
    const double variance = cols > 0 ? squares / static_cast<double>(cols) : 0.0;  // empty rows: 0
    const Acc mean = static_cast<Acc>(row_mean);
    const Acc rstd = static_cast<Acc>(reciprocal_sqrt(variance + eps));
    if (lane == 0) write_statistics(mean_out, rstd_out, row, mean, rstd);
    T* y = output + row * cols;
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const int64_t col = lane + int64_t{item} * 32;
      if (col < cols) y[col] = normalized(values[item], mean, rstd, weight, bias, col);
    }
  }
}

// One block of kRowBlockThreads per row, for rows too long for a warp's registers.
template <typename T>
__global__ void __launch_bounds__(kRowBlockThreads)
    forward_block_kernel(const T* input, const T* weight, const T* bias, T* output, acc_t<T>* mean_out,
                         acc_t<T>* rstd_out, int64_t rows, int64_t cols, double eps) {
  using Acc = acc_t<T>;
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = input + row * cols;
    double sum = 0;
    for (int64_t col = threadIdx.x; col < cols; col += blockDim.x) sum += static_cast<double>(static_cast<Acc>(x[col]));
    const double row_mean = block_sum(sum, shared) / static_cast<double>(cols);  // cols > kLayerNormWarpMaxCols here
    double squares = 0;
    for (int64_t col = threadIdx.x; col < cols; col += blockDim.x) {
      const double centred = static_cast<double>(static_cast<Acc>(x[col])) - row_mean;
      squares += centred * centred;
    }
    const Acc mean = static_cast<Acc>(row_mean);
    const Acc rstd = static_cast<Acc>(reciprocal_sqrt(block_sum(squares, shared) / static_cast<double>(cols) + eps));
    if (threadIdx.x == 0) write_statistics(mean_out, rstd_out, row, mean, rstd);
    T* y = output + row * cols;
    for (int64_t col = threadIdx.x; col < cols; col += blockDim.x)
      y[col] = normalized(static_cast<Acc>(x[col]), mean, rstd, weight, bias, col);
  }
}

template <typename T, int kItems> int launch_warp(const LayerNormForward& args) {
  const dim3 block(32, kWarpsPerBlock);
  const unsigned blocks = capped_blocks((args.rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  forward_warp_kernel<T, kItems><<<blocks, block, 0, static_cast<cudaStream_t>(args.stream)>>>(
      static_cast<const T*>(args.input), static_cast<const T*>(args.weight), static_cast<const T*>(args.bias),
      static_cast<T*>(args.output), static_cast<acc_t<T>*>(args.mean), static_cast<acc_t<T>*>(args.rstd), args.rows,
      args.cols, static_cast<double>(args.eps));
  return static_cast<int>(cudaGetLastError());
}

template <typename T> int launch_typed(const LayerNormForward& args) {
  // Registers per lane: the smallest power of two that covers the row.
  const int64_t per_lane = (args.cols + 31) / 32;
  if (per_lane <= 1) return launch_warp<T, 1>(args);
  if (per_lane <= 2) return launch_warp<T, 2>(args);
  if (per_lane <= 4) return launch_warp<T, 4>(args);
  if (per_lane <= 8) return launch_warp<T, 8>(args);
  if (per_lane <= 16) return launch_warp<T, 16>(args);
  if (per_lane <= 32) return launch_warp<T, 32>(args);
  static_assert(kLayerNormWarpMaxCols == 32 * 32, "the warp path's largest instantiation covers 32 * 32 columns");
  forward_block_kernel<T><<<capped_blocks(args.rows), kRowBlockThreads, 0, static_cast<cudaStream_t>(args.stream)>>>(
      static_cast<const T*>(args.input), static_cast<const T*>(args.weight), static_cast<const T*>(args.bias),
      static_cast<T*>(args.output), static_cast<acc_t<T>*>(args.mean), static_cast<acc_t<T>*>(args.rstd), args.rows,
      args.cols, static_cast<double>(args.eps));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_layer_norm_forward(const LayerNormForward& args) {
  if (args.rows <= 0) return 0;  // nothing to write (rows with zero columns still get mean and rstd)
  return dispatch_floating(args.dtype, [&](auto zero) { return launch_typed<decltype(zero)>(args); });
}

}  // namespace ember::cuda
