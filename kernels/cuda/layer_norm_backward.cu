// ember's own layer_norm backward on CUDA. grad_input: one warp (short rows) or one block (long
// rows) per row, two passes over the row: the row sums of g = grad_y * w and g * xhat, then
// grad_x = rstd * (g - mean(g) - xhat * mean(g * xhat)). grad_weight and grad_bias: column sums
// over rows in two stages (chunk partials in scratch, then the chunks in order), never atomics,
// so every run gives the same bits. Every sum is double, as on the CPU: where grad_y sits far
// from zero, g - mean(g) cancels, and a float mean(g) would be off by more than the difference.
#include <cuda_runtime_api.h>

#include "kernels/cuda/layer_norm_device.h"

namespace ember::cuda {

namespace {

using namespace layer_norm_detail;

template <typename T> struct BackwardPointers {
  const T* grad_output;
  const T* input;
  const acc_t<T>* mean;
  const acc_t<T>* rstd;
  const T* weight;  // may be null
  T* grad_input;
};

// Row sums over a warp (kPerWarp) or over the whole block.
template <bool kPerWarp, typename Acc> __device__ __forceinline__ Acc row_sum(Acc value, Acc* shared) {
  if constexpr (kPerWarp) return warp_sum(value);
  else return block_sum(value, shared);
}

// grad_input. kPerWarp: 32 x kWarpsPerBlock threads, one row per warp; else kRowBlockThreads
// threads, one row per block. Either way `threads` lanes stride over the row's columns.
template <typename T, bool kPerWarp>
__global__ void __launch_bounds__(kRowBlockThreads)
    grad_input_kernel(BackwardPointers<T> p, int64_t rows, int64_t cols) {
  using Acc = acc_t<T>;
  __shared__ double shared[32];
  const int64_t threads = kPerWarp ? 32 : blockDim.x;
  const int64_t first_row = kPerWarp ? int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.y : int64_t{blockIdx.x};
  const int64_t row_stride = kPerWarp ? int64_t{gridDim.x} * kWarpsPerBlock : int64_t{gridDim.x};
  const double inverse_cols = 1.0 / static_cast<double>(cols);  // cols > 0: the launcher skips empty rows
  for (int64_t row = first_row; row < rows; row += row_stride) {
    const T* dy = p.grad_output + row * cols;
    const T* x = p.input + row * cols;
    const Acc mean = p.mean[row];
    const Acc rstd = p.rstd[row];
    double sum_g = 0;
    double sum_g_xhat = 0;
    for (int64_t col = threadIdx.x; col < cols; col += threads) {
      const Acc xhat = (static_cast<Acc>(x[col]) - mean) * rstd;
      const Acc g = static_cast<Acc>(dy[col]) * (p.weight ? static_cast<Acc>(p.weight[col]) : Acc(1));
      sum_g += static_cast<double>(g);
      sum_g_xhat += static_cast<double>(g * xhat);
    }
    const Acc mean_g = static_cast<Acc>(row_sum<kPerWarp>(sum_g, shared) * inverse_cols);
    const Acc mean_g_xhat = static_cast<Acc>(row_sum<kPerWarp>(sum_g_xhat, shared) * inverse_cols);
    T* dx = p.grad_input + row * cols;
    for (int64_t col = threadIdx.x; col < cols; col += threads) {
      const Acc xhat = (static_cast<Acc>(x[col]) - mean) * rstd;
      const Acc g = static_cast<Acc>(dy[col]) * (p.weight ? static_cast<Acc>(p.weight[col]) : Acc(1));
      dx[col] = static_cast<T>(rstd * (g - mean_g - xhat * mean_g_xhat));
    }
  }
}

// Column partials: block (32 columns x kChunkLanes row lanes) for column tile blockIdx.x and row
// chunk blockIdx.y. partials[chunk * cols + col] = sum of grad_y * xhat over the chunk's rows,
// partials[(chunks + chunk) * cols + col] = sum of grad_y, each added in a fixed order.
constexpr int kChunkLanes = 8;

template <typename T>
__global__ void column_partials_kernel(BackwardPointers<T> p, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                       double* partials) {
  using Acc = acc_t<T>;
  __shared__ double shared_w[kChunkLanes][32];
  __shared__ double shared_b[kChunkLanes][32];
  const int64_t col = int64_t{blockIdx.x} * 32 + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t chunks = gridDim.y;
  const int64_t row_begin = chunk * rows_per_chunk;
  const int64_t row_end = row_begin + rows_per_chunk < rows ? row_begin + rows_per_chunk : rows;
  double sum_w = 0;
  double sum_b = 0;
  if (col < cols) {
    for (int64_t row = row_begin + threadIdx.y; row < row_end; row += kChunkLanes) {
      const Acc dy = static_cast<Acc>(p.grad_output[row * cols + col]);
      const Acc xhat = (static_cast<Acc>(p.input[row * cols + col]) - p.mean[row]) * p.rstd[row];
      sum_w += static_cast<double>(dy * xhat);
      sum_b += static_cast<double>(dy);
    }
  }
  shared_w[threadIdx.y][threadIdx.x] = sum_w;
  shared_b[threadIdx.y][threadIdx.x] = sum_b;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    double total_w = 0;
    double total_b = 0;
    for (int lane = 0; lane < kChunkLanes; ++lane) {
      total_w += shared_w[lane][threadIdx.x];
      total_b += shared_b[lane][threadIdx.x];
    }
    partials[chunk * cols + col] = total_w;
    partials[(chunks + chunk) * cols + col] = total_b;
  }
}

// grad_weight[col] and grad_bias[col]: the chunks' partials added in chunk order.
template <typename T>
__global__ void column_totals_kernel(const double* partials, int64_t chunks, int64_t cols, T* grad_weight,
                                     T* grad_bias) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t col = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; col < cols; col += stride) {
    double total_w = 0;
    double total_b = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      total_w += partials[chunk * cols + col];
      total_b += partials[(chunks + chunk) * cols + col];
    }
    grad_weight[col] = static_cast<T>(total_w);
    grad_bias[col] = static_cast<T>(total_b);
  }
}

template <typename T> int launch_typed(const LayerNormBackward& args) {
  const cudaStream_t stream = static_cast<cudaStream_t>(args.stream);
  const BackwardPointers<T> p{static_cast<const T*>(args.grad_output), static_cast<const T*>(args.input),
                              static_cast<const acc_t<T>*>(args.mean),  static_cast<const acc_t<T>*>(args.rstd),
                              static_cast<const T*>(args.weight),       static_cast<T*>(args.grad_input)};
  if (args.rows > 0) {
    if (args.cols <= kLayerNormWarpMaxCols) {
      const unsigned blocks = capped_blocks((args.rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
      grad_input_kernel<T, true><<<blocks, dim3(32, kWarpsPerBlock), 0, stream>>>(p, args.rows, args.cols);
    } else {
      grad_input_kernel<T, false><<<capped_blocks(args.rows), kRowBlockThreads, 0, stream>>>(p, args.rows, args.cols);
    }
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return static_cast<int>(status);
  }
  // Zero rows still write grad_weight and grad_bias (as zeros): one chunk of no rows.
  const int64_t chunks = layer_norm_partial_chunks(args.rows, args.cols);
  const int64_t rows_per_chunk = (args.rows + chunks - 1) / chunks;
  const dim3 tiles(static_cast<unsigned>((args.cols + 31) / 32), static_cast<unsigned>(chunks));
  column_partials_kernel<T><<<tiles, dim3(32, kChunkLanes), 0, stream>>>(p, args.rows, args.cols, rows_per_chunk,
                                                                       static_cast<double*>(args.partials));
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return static_cast<int>(status);
  column_totals_kernel<T><<<capped_blocks((args.cols + 255) / 256), 256, 0, stream>>>(
      static_cast<const double*>(args.partials), chunks, args.cols, static_cast<T*>(args.grad_weight),
      static_cast<T*>(args.grad_bias));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int64_t layer_norm_partial_chunks(int64_t rows, int64_t cols) {
  // About 64 rows per chunk, at most 256 chunks: enough blocks to fill the GPU for short batches,
  // a short second stage for long ones. Depends only on the shape, so sums are reproducible.
  const int64_t wanted = (rows + 63) / 64;
  return wanted < 1 ? 1 : (wanted > 256 ? 256 : wanted);
}

int launch_layer_norm_backward(const LayerNormBackward& args) {
  if (args.cols <= 0) return 0;  // grad_input, grad_weight and grad_bias are all empty
  return dispatch_floating(args.dtype, [&](auto zero) { return launch_typed<decltype(zero)>(args); });
}

}  // namespace ember::cuda
