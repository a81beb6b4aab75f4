// Device helpers shared by the CUDA gather, scatter and cat kernels: reporting an out-of-range
// index, atomic accumulation per dtype, and the row-copy tiling (a row of W-byte words spread over
// a power-of-two number of lanes, so several short rows share one block without any division).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/device_error.cuh"
#include "kernels/cuda/index.h"
#include "kernels/half_types.h"

namespace ember::cuda::device {

constexpr int kThreads = 256;
constexpr int64_t kMaxGrid = 65535;  // per grid dimension; kernels loop past it

// True when `value` is in [0, limit); otherwise reports it (with the index element `position`).
__device__ __forceinline__ bool index_in_range(int64_t value, int64_t limit, int64_t position, IndexFlag flag) {
  if (value >= 0 && value < limit) return true;
  report_error(flag, value, limit, position);
  return false;
}

// The accumulator type of a source type: 16-bit floats accumulate in fp32 scratch.
template <typename T> struct Accumulate { using type = T; };
template <> struct Accumulate<BFloat16> { using type = float; };
template <> struct Accumulate<Float16> { using type = float; };
template <typename T> using accumulate_t = typename Accumulate<T>::type;

// atomicAdd for every accumulator type (int64 through its two's-complement unsigned twin).
__device__ __forceinline__ void atomic_add(float* target, float value) { atomicAdd(target, value); }
__device__ __forceinline__ void atomic_add(double* target, double value) { atomicAdd(target, value); }
__device__ __forceinline__ void atomic_add(int32_t* target, int32_t value) { atomicAdd(target, value); }
__device__ __forceinline__ void atomic_add(int64_t* target, int64_t value) {
  atomicAdd(reinterpret_cast<unsigned long long*>(target), static_cast<unsigned long long>(value));
}

// row / count for the row decomposition of the select and add kernels: 32-bit division (several
// times cheaper on the GPU) whenever the row numbers fit, which the caller's `rows` decides once.
__device__ __forceinline__ int64_t outer_of(int64_t row, int64_t count, int64_t rows) {
  if (rows <= int64_t{0xffffffff}) return static_cast<uint32_t>(row) / static_cast<uint32_t>(count);
  return row / count;
}

// How a block of kThreads threads covers rows of `row_words` words: 2^log2_lanes lanes per row
// (at most kThreads), the remaining threads take further rows.
struct RowTiling {
  int log2_lanes = 0;
};

inline RowTiling tiling_for(int64_t row_words) {
  RowTiling tiling;
  while (tiling.log2_lanes < 8 && (int64_t{1} << tiling.log2_lanes) < row_words) ++tiling.log2_lanes;
  return tiling;
}

inline unsigned grid_rows(int64_t rows, RowTiling tiling) {
  const int64_t rows_per_block = kThreads >> tiling.log2_lanes;
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < kMaxGrid ? blocks : kMaxGrid));
}

inline unsigned grid_columns(int64_t row_words, RowTiling tiling) {
  const int64_t lanes = int64_t{1} << tiling.log2_lanes;
  const int64_t blocks = (row_words + lanes - 1) / lanes;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < kMaxGrid ? blocks : kMaxGrid));
}

// Copies row `row` for every row this thread owns: rows_of(row) gives the destination and source
// words (source null: write zeros). Rows stride over blockIdx.x, words over blockIdx.y.
template <typename Word, typename RowsOf>
__device__ __forceinline__ void copy_rows(int64_t rows, int64_t row_words, RowTiling tiling, RowsOf rows_of) {
  const int lanes = 1 << tiling.log2_lanes;
  const int lane = static_cast<int>(threadIdx.x) & (lanes - 1);
  const int64_t rows_per_block = blockDim.x >> tiling.log2_lanes;
  const int64_t first_row = int64_t{blockIdx.x} * rows_per_block + (threadIdx.x >> tiling.log2_lanes);
  const int64_t row_step = int64_t{gridDim.x} * rows_per_block;
  const int64_t first_word = int64_t{blockIdx.y} * lanes + lane;
  const int64_t word_step = int64_t{gridDim.y} * lanes;
  for (int64_t row = first_row; row < rows; row += row_step) {
    Word* to = nullptr;
    const Word* from = nullptr;
    rows_of(row, to, from);
    if (from != nullptr) {
      for (int64_t word = first_word; word < row_words; word += word_step) to[word] = from[word];
    } else {
      for (int64_t word = first_word; word < row_words; word += word_step) to[word] = Word{};
    }
  }
}

// The widest word (16, 8, 4, 2 or 1 bytes) dividing every value in `values` (sizes, addresses).
inline int word_bytes_for(std::initializer_list<uint64_t> values) {
  int bytes = 16;
  for (uint64_t value : values)
    while (bytes > 1 && value % static_cast<uint64_t>(bytes) != 0) bytes /= 2;
  return bytes;
}

// Calls fn(Word{}) with the unsigned word type of `bytes` bytes.
template <typename Fn> void dispatch_word(int bytes, Fn&& fn) {
  switch (bytes) {
    case 16: return fn(uint4{});
    case 8: return fn(uint2{});
    case 4: return fn(uint32_t{});
    case 2: return fn(uint16_t{});
    default: return fn(uint8_t{});
  }
}

inline int check_launch() { return static_cast<int>(cudaGetLastError()); }

}  // namespace ember::cuda::device
