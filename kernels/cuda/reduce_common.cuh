// Device-side building blocks shared by the reduction, softmax and loss kernels (.cu files only):
// dtype dispatch, the compute and accumulator types, loads/stores through them, and warp/block
// all-reduces whose combine order is fixed, so every result is identical run to run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/half_types.h"

namespace ember {
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda::detail {

// runtime/dtype.h's compute_t and dispatch, restated because that header brings fmt, which nvcc
// cannot compile. The case order follows enum class DType.
template <typename T> struct Compute { using type = T; };
template <> struct Compute<BFloat16> { using type = float; };
template <> struct Compute<Float16> { using type = float; };
template <typename T> using compute_t = typename Compute<T>::type;

// Sums accumulate in double for float32 and float64 (like the CPU), in fp32 for 16-bit floats,
// and in int64 for integers and bool.
template <typename T> struct Accumulate { using type = int64_t; };
template <> struct Accumulate<float> { using type = double; };
template <> struct Accumulate<double> { using type = double; };
template <> struct Accumulate<BFloat16> { using type = float; };
template <> struct Accumulate<Float16> { using type = float; };
template <typename T> using accumulate_t = typename Accumulate<T>::type;

enum DTypeCode : int { kFloat32 = 0, kFloat64 = 1, kBFloat16 = 2, kFloat16 = 3, kInt32 = 4, kInt64 = 5 };

template <typename Fn> void dispatch_all(DType dtype, Fn&& fn) {
  switch (static_cast<int>(dtype)) {
    case kFloat32: return fn(float{});
    case kFloat64: return fn(double{});
    case kBFloat16: return fn(BFloat16{});
    case kFloat16: return fn(Float16{});
    case kInt32: return fn(int32_t{});
    case kInt64: return fn(int64_t{});
    default: return fn(bool{});
  }
}

// Floating dtypes only; the shape rules have already rejected the others.
template <typename Fn> void dispatch_floating(DType dtype, Fn&& fn) {
  switch (static_cast<int>(dtype)) {
    case kFloat64: return fn(double{});
    case kBFloat16: return fn(BFloat16{});
    case kFloat16: return fn(Float16{});
    default: return fn(float{});
  }
}

template <typename T> __device__ __forceinline__ compute_t<T> load(const T* data, int64_t offset) {
  return static_cast<compute_t<T>>(data[offset]);
}

// Converts through the output's compute type so 16-bit outputs round once, from fp32.
template <typename Out, typename Value> __device__ __forceinline__ Out to_output(Value value) {
  return static_cast<Out>(static_cast<compute_t<Out>>(value));
}

// Lane 0..31 all end with the combine of the 32 values. The butterfly pairs lanes symmetrically,
// so with AddOp every lane computes bit-identical results (a + b == b + a in IEEE arithmetic).
// MaxOp is not symmetric between +0 and -0 (neither is greater), so lanes may disagree on the
// sign of a zero maximum; its callers only subtract the maximum, where the sign cannot show.
template <typename T, typename Combine> __device__ __forceinline__ T warp_all_reduce(T value, Combine combine) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Every thread of a block of `Threads` (a multiple of 32, at most 1024) ends with the combine of
// all values: warps reduce, then each warp combines the warp results in warp order.
template <int Threads, typename T, typename Combine>
__device__ __forceinline__ T block_all_reduce(T value, Combine combine) {
  if constexpr (Threads == 32) {
    return warp_all_reduce(value, combine);
  } else {
    constexpr int kWarps = Threads / 32;
    __shared__ T warp_results[kWarps];
    value = warp_all_reduce(value, combine);
    __syncthreads();  // earlier readers of warp_results are done
    if (threadIdx.x % 32 == 0) warp_results[threadIdx.x / 32] = value;
    __syncthreads();
    T total = warp_results[0];
#pragma unroll
    for (int warp = 1; warp < kWarps; ++warp) total = combine(total, warp_results[warp]);
    return total;
  }
}

struct AddOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {  // NaN wins, like fn::MaxReduce
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return (b > a || b != b) ? b : a; }
};

// Grid size for grid-stride loops over `items`: all of them, capped so huge counts loop.
inline unsigned grid_for(int64_t items, int64_t cap = 1 << 20) {
  return static_cast<unsigned>(items < 1 ? 1 : (items < cap ? items : cap));
}

inline int status_of_launch() { return static_cast<int>(cudaGetLastError()); }

}  // namespace ember::cuda::detail
