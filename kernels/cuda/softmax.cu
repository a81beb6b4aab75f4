// CUDA softmax and log_softmax, numerically stable (the maximum is subtracted before exp) with
// fp32 math for 16-bit inputs and, as on the CPU, the sum of exp(x - max) in double (on a
// confident row it is ~1, and a float sum would round log_softmax's ~1e-6 away). Three shapes of
// kernel over the [outer, length, inner] layout:
//   rows up to 1024 long (inner == 1): one warp per row, the row held in registers;
//   longer rows: one block per row, cached in shared memory when it fits;
//   inner > 1: one thread per (outer, inner) column, adjacent threads on adjacent columns.
#include "kernels/cuda/reduce_common.cuh"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/softmax_math.cuh"

namespace ember::cuda {

namespace detail {

namespace {

// Without an opt-in a block may use 48 KiB of shared memory, static and dynamic together; the
// block reductions' static arrays (maximum in C, total in double) take up to 128 bytes, so the
// row cache stops 1 KiB short.
constexpr int64_t kSharedCacheBytes = 47 * 1024;

template <bool Log, typename C> __device__ __forceinline__ C softmax_value(C value, C maximum, C log_total, C inverse) {
  if constexpr (Log) {
    return (value - maximum) - log_total;  // not value - (max + log_total): that rounds to max's ulp
  } else {
    return exp_of(value - maximum) * inverse;
  }
}

template <int PerLane, bool Log, typename T>
__global__ void __launch_bounds__(kRowBlock) softmax_warp_rows(const T* input, T* output, int64_t rows, int64_t length) {
  using C = compute_t<T>;
  const int lane = threadIdx.x % 32;
  for (int64_t row = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32; row < rows;
       row += int64_t{gridDim.x} * kWarpsPerBlock) {
    const T* data = input + row * length;
    C values[PerLane];
    C maximum = negative_infinity<C>();
#pragma unroll
    for (int k = 0; k < PerLane; ++k) {
      const int64_t r = lane + 32 * k;
      values[k] = r < length ? load(data, r) : negative_infinity<C>();
      maximum = MaxOp{}(maximum, values[k]);
    }
    maximum = warp_all_reduce(maximum, MaxOp{});
    // softmax keeps exp(x - max) in the registers: one exp per element.
    double total = 0;
#pragma unroll
    for (int k = 0; k < PerLane; ++k) {
      if (lane + 32 * k < length) {
        const C exponential = exp_of(values[k] - maximum);
        if (!Log) values[k] = exponential;
        total += static_cast<double>(exponential);
      }
    }
    total = warp_all_reduce(total, AddOp{});
    T* out = output + row * length;
    if constexpr (Log) {
      const C log_total = static_cast<C>(log(total));
#pragma unroll
      for (int k = 0; k < PerLane; ++k) {
        const int64_t r = lane + 32 * k;
        if (r < length) out[r] = to_output<T>((values[k] - maximum) - log_total);
      }
    } else {
      const C inverse = static_cast<C>(1.0 / total);
#pragma unroll
      for (int k = 0; k < PerLane; ++k) {
        const int64_t r = lane + 32 * k;
        if (r < length) out[r] = to_output<T>(values[k] * inverse);
      }
    }
  }
}

// Each thread caches exactly the elements it reads in every pass, so the cache needs no sync.
template <bool Log, typename T>
__global__ void __launch_bounds__(kRowBlock) softmax_block_rows(const T* input, T* output, int64_t rows, int64_t length,
                                                               bool cached) {
  using C = compute_t<T>;
  extern __shared__ __align__(16) unsigned char cache_bytes[];
  C* cache = reinterpret_cast<C*>(cache_bytes);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* data = input + row * length;
    C maximum = negative_infinity<C>();
    for (int64_t r = threadIdx.x; r < length; r += kRowBlock) {
      const C value = load(data, r);
      if (cached) cache[r] = value;
      maximum = MaxOp{}(maximum, value);
    }
    maximum = block_all_reduce<kRowBlock>(maximum, MaxOp{});
    double total = 0;
    for (int64_t r = threadIdx.x; r < length; r += kRowBlock) {
      const C exponential = exp_of((cached ? cache[r] : load(data, r)) - maximum);
      if (!Log && cached) cache[r] = exponential;  // the cached softmax needs one exp per element
      total += static_cast<double>(exponential);
    }
    total = block_all_reduce<kRowBlock>(total, AddOp{});
    const C log_total = Log ? static_cast<C>(log(total)) : C(0);
    const C inverse = static_cast<C>(1.0 / total);
    T* out = output + row * length;
    for (int64_t r = threadIdx.x; r < length; r += kRowBlock) {
      if (!Log && cached) {
        out[r] = to_output<T>(cache[r] * inverse);
      } else {
        out[r] = to_output<T>(softmax_value<Log>(cached ? cache[r] : load(data, r), maximum, log_total, inverse));
      }
    }
  }
}

template <bool Log, typename T>
__global__ void softmax_columns(const T* input, T* output, ReduceLayout layout) {
  using C = compute_t<T>;
  const int64_t columns = layout.outer * layout.inner;
  const int64_t length = layout.reduce;
  const int64_t step = layout.inner;
  for (int64_t column = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; column < columns;
       column += int64_t{blockDim.x} * gridDim.x) {
    const int64_t base = (column / layout.inner) * length * layout.inner + column % layout.inner;
    C maximum = negative_infinity<C>();
    for (int64_t r = 0; r < length; ++r) maximum = MaxOp{}(maximum, load(input, base + r * step));
    double total = 0;
    for (int64_t r = 0; r < length; ++r) total += static_cast<double>(exp_of(load(input, base + r * step) - maximum));
    const C log_total = Log ? static_cast<C>(log(total)) : C(0);
    const C inverse = static_cast<C>(1.0 / total);
    for (int64_t r = 0; r < length; ++r)
      output[base + r * step] = to_output<T>(softmax_value<Log>(load(input, base + r * step), maximum, log_total, inverse));
  }
}

template <bool Log, typename T>
void launch_typed(const T* input, T* output, const ReduceLayout& layout) {
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  const int64_t length = layout.reduce;
  if (layout.inner > 1) {
    const int64_t blocks = (layout.outer * layout.inner + kRowBlock - 1) / kRowBlock;
    softmax_columns<Log><<<grid_for(blocks, 65536), kRowBlock, 0, stream>>>(input, output, layout);
    return;
  }
  const int64_t warp_blocks = (layout.outer + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (length <= kShortRow) {
    softmax_warp_rows<4, Log><<<grid_for(warp_blocks, 65536), kRowBlock, 0, stream>>>(input, output, layout.outer, length);
  } else if (length <= kWarpRow) {
    softmax_warp_rows<32, Log><<<grid_for(warp_blocks, 65536), kRowBlock, 0, stream>>>(input, output, layout.outer, length);
  } else {
    const int64_t cache_bytes = length * static_cast<int64_t>(sizeof(compute_t<T>));
    const bool cached = cache_bytes <= kSharedCacheBytes;
    softmax_block_rows<Log><<<grid_for(layout.outer, 65536), kRowBlock, cached ? cache_bytes : 0, stream>>>(
        input, output, layout.outer, length, cached);
  }
}

}  // namespace

}  // namespace detail

int launch_softmax(bool log, DType dtype, const void* input, void* output, const ReduceLayout& layout) {
  if (layout.outer * layout.reduce * layout.inner == 0) return 0;
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (log) {
      detail::launch_typed<true>(static_cast<const T*>(input), static_cast<T*>(output), layout);
    } else {
      detail::launch_typed<false>(static_cast<const T*>(input), static_cast<T*>(output), layout);
    }
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
