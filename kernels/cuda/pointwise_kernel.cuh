// Device side of every CUDA pointwise op (included by kernels/cuda/*.cu only): one launcher that
// maps a functor from kernels/functors.h over 0-3 inputs into one output, computing 16-bit floats
// in fp32 like the CPU (load -> compute_t -> functor -> store type).
// Two paths: a contiguous one (same-shape dense inputs and output, 16-byte vector loads/stores
// when every pointer is aligned, 32-bit indices) and a general one (any strides, broadcasts and a
// strided output for in-place ops; 32-bit index math below 2^31 elements, 64-bit above).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cuda/elementwise.h"
#include "kernels/half_types.h"

namespace ember::cuda::detail {

constexpr int kThreads = 256;
// Grid cap: a grid-stride loop covers larger tensors; 2^16 blocks of 256 threads fill any GPU.
constexpr int64_t kMaxBlocks = 65536;

// runtime/dtype.h's compute_t and dispatch_dtype, restated because that header brings fmt, which
// nvcc cannot compile. The case order follows enum class DType.
template <typename T> struct Compute { using type = T; };
template <> struct Compute<BFloat16> { using type = float; };
template <> struct Compute<Float16> { using type = float; };
template <typename T> using compute_t = typename Compute<T>::type;

// Each dispatcher calls fn(T{}) and returns its status; a dtype the op does not support returns
// cudaErrorInvalidValue (the op files reject such dtypes before launching, like the CPU ops).
template <typename Fn> int dispatch_floating(DType dtype, Fn&& fn) {
  switch (static_cast<int>(dtype)) {
    case 0: return fn(float{});
    case 1: return fn(double{});
    case 2: return fn(BFloat16{});
    case 3: return fn(Float16{});
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}
template <typename Fn> int dispatch_numeric(DType dtype, Fn&& fn) {
  switch (static_cast<int>(dtype)) {
    case 4: return fn(int32_t{});
    case 5: return fn(int64_t{});
    default: return dispatch_floating(dtype, fn);
  }
}
template <typename Fn> int dispatch_all(DType dtype, Fn&& fn) {
  if (static_cast<int>(dtype) == 6) return fn(bool{});
  return dispatch_numeric(dtype, fn);
}

// N elements of T moved as one aligned access (N * sizeof(T) <= 16 bytes).
template <typename T, int N> struct alignas(sizeof(T) * N) Packed {
  T values[N];
};

// Elements per vector access: 16 bytes of the widest type involved.
template <typename Out, typename... In> constexpr int vector_width() {
  size_t widest = sizeof(Out);
  ((widest = sizeof(In) > widest ? sizeof(In) : widest), ...);
  return static_cast<int>(16 / widest);
}

template <int N, typename Out, typename Functor, typename... In>
__device__ __forceinline__ Packed<Out, N> compute_packed(const Functor& functor, const Packed<In, N>&... packs) {
  Packed<Out, N> result;
#pragma unroll
  for (int k = 0; k < N; ++k) result.values[k] = static_cast<Out>(functor(static_cast<compute_t<In>>(packs.values[k])...));
  return result;
}

// Dense inputs and output of `numel` (< 2^31) elements: N-element packs, then the tail.
template <int N, typename Out, typename Functor, typename... In>
__global__ void __launch_bounds__(kThreads)
    contiguous_kernel(Out* __restrict__ out, uint32_t numel, Functor functor, const In* __restrict__... inputs) {
  const uint32_t packs = numel / N;
  const uint32_t stride = blockDim.x * gridDim.x;
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t pack = first; pack < packs; pack += stride) {
    reinterpret_cast<Packed<Out, N>*>(out)[pack] =
        compute_packed<N, Out>(functor, reinterpret_cast<const Packed<In, N>*>(inputs)[pack]...);
  }
  const uint32_t tail = packs * N + first;  // fewer than N elements remain
  if (first < numel - packs * N) out[tail] = static_cast<Out>(functor(static_cast<compute_t<In>>(inputs[tail])...));
}

// The inputs of the general path: data, strides over the output's shape, and whether all
// operands (output included) are dense in the output's order, which skips the index math.
template <int K> struct OperandPack {
  const void* data[K > 0 ? K : 1];
  int64_t strides[K > 0 ? K : 1][kMaxDims];
  bool all_contiguous;
};

template <typename T> __device__ __forceinline__ compute_t<T> load_at(const void* data, int64_t offset) {
  return static_cast<compute_t<T>>(static_cast<const T*>(data)[offset]);
}

template <typename Out, typename Functor, typename... In, size_t... I>
__device__ __forceinline__ void apply_at(Out* out, int64_t out_offset, const Functor& functor,
                                         const OperandPack<sizeof...(In)>& inputs, const int64_t* offsets,
                                         std::index_sequence<I...>) {
  out[out_offset] = static_cast<Out>(functor(load_at<In>(inputs.data[I], offsets[I])...));
}

// Any strides: the output's linear index is split into coordinates once and every operand's
// offset follows from them. __grid_constant__ lets the loop index the parameters' arrays in place;
// without it every thread first copies them to local memory. Index is uint32_t when numel < 2^31 (cheaper division), else uint64_t.
template <typename Index, typename Out, typename Functor, typename... In>
__global__ void __launch_bounds__(kThreads)
    strided_kernel(const __grid_constant__ OutputOperand out, const __grid_constant__ LaunchShape shape,
                   Functor functor, const __grid_constant__ OperandPack<sizeof...(In)> inputs) {
  constexpr int K = sizeof...(In);
  const Index numel = static_cast<Index>(shape.numel);
  const Index stride = Index{blockDim.x} * gridDim.x;
  Out* const out_data = static_cast<Out*>(out.data);
  for (Index i = Index{blockIdx.x} * blockDim.x + threadIdx.x; i < numel; i += stride) {
    int64_t offsets[K > 0 ? K : 1] = {};
    int64_t out_offset = static_cast<int64_t>(i);
    if (inputs.all_contiguous) {
#pragma unroll
      for (int k = 0; k < K; ++k) offsets[k] = static_cast<int64_t>(i);
    } else {
      Index remaining = i;
      out_offset = 0;
      for (int dim = shape.dims - 1; dim >= 0; --dim) {
        const Index size = static_cast<Index>(shape.sizes[dim]);
        const Index next = remaining / size;
        const int64_t coordinate = static_cast<int64_t>(remaining - next * size);
        remaining = next;
        out_offset += coordinate * out.strides[dim];  // unused when the output is dense
#pragma unroll
        for (int k = 0; k < K; ++k) offsets[k] += coordinate * inputs.strides[k][dim];
      }
    }
    if (out.contiguous) out_offset = static_cast<int64_t>(i);
    apply_at<Out, Functor, In...>(out_data, out_offset, functor, inputs, offsets, std::index_sequence_for<In...>{});
  }
}

inline unsigned blocks_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

inline bool aligned(const void* pointer, size_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

template <typename Out, typename... In, typename Functor, size_t... I>
int launch_pointwise_impl(const OutputOperand& out, const LaunchShape& shape, const Functor& functor,
                          const StridedOperand* inputs, std::index_sequence<I...>) {
  constexpr int K = sizeof...(In);
  const auto stream = static_cast<cudaStream_t>(shape.stream);
  bool all_contiguous = out.contiguous;
  for (int k = 0; k < K; ++k) all_contiguous = all_contiguous && inputs[k].contiguous;
  constexpr int64_t kIndexLimit = int64_t{1} << 31;
  if (all_contiguous && shape.numel < kIndexLimit) {
    constexpr int N = vector_width<Out, In...>();
    const bool vectorizable = aligned(out.data, sizeof(Out) * N) && (aligned(inputs[I].data, sizeof(In) * N) && ...);
    if (vectorizable) {
      contiguous_kernel<N, Out, Functor, In...><<<blocks_for(shape.numel / N + 1), kThreads, 0, stream>>>(
          static_cast<Out*>(out.data), static_cast<uint32_t>(shape.numel), functor,
          static_cast<const In*>(inputs[I].data)...);
      return static_cast<int>(cudaGetLastError());
    }
  }
  OperandPack<K> pack{};
  pack.all_contiguous = all_contiguous;
  for (int k = 0; k < K; ++k) {
    pack.data[k] = inputs[k].data;
    for (int dim = 0; dim < kMaxDims; ++dim) pack.strides[k][dim] = inputs[k].strides[dim];
  }
  const unsigned blocks = blocks_for(shape.numel);
  if (shape.numel < kIndexLimit) {
    strided_kernel<uint32_t, Out, Functor, In...><<<blocks, kThreads, 0, stream>>>(out, shape, functor, pack);
  } else {
    strided_kernel<uint64_t, Out, Functor, In...><<<blocks, kThreads, 0, stream>>>(out, shape, functor, pack);
  }
  return static_cast<int>(cudaGetLastError());
}

// out = functor(inputs...) over `shape`; inputs[k] is read as In_k, the result stored as Out.
// Returns the launch's cudaError_t as an int.
template <typename Out, typename... In, typename Functor>
int launch_pointwise(const OutputOperand& out, const LaunchShape& shape, const Functor& functor,
                     const StridedOperand* inputs) {
  if (shape.numel == 0) return 0;
  return launch_pointwise_impl<Out, In...>(out, shape, functor, inputs, std::index_sequence_for<In...>{});
}

// An OutputOperand for a dense output buffer.
inline OutputOperand dense_output(void* data) {
  OutputOperand out;
  out.data = data;
  out.contiguous = true;
  return out;
}

}  // namespace ember::cuda::detail
