// CUDA multi-tensor optimizer steps: each block walks chunks of the launch's tensors (chunk c
// belongs to the tensor whose first_chunk range holds it, found by binary search once per chunk),
// and each thread applies fn::SgdStep / fn::AdamStep to elements of the chunk in the compute type,
// exactly as the per-parameter kernels of optim.cu do. Elements are independent: deterministic.
#include <cuda_runtime_api.h>

#include "kernels/cuda/multi_tensor_optim.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/half_types.h"
#include "kernels/optim_functors.h"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

// pointwise_kernel.cuh's compute type (fp32 for 16-bit floats) and floating-dtype dispatch.
using detail::compute_t;
using detail::dispatch_floating;

// The tensor holding chunk `chunk`: the last t with first_chunk[t] <= chunk (tables hold no empty
// tensors, so that t has the chunk).
__device__ __forceinline__ int tensor_of_chunk(const MultiTensorTable& table, int64_t chunk) {
  int low = 0;
  int high = table.count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (table.first_chunk[middle] <= chunk) low = middle;
    else high = middle - 1;
  }
  return low;
}

// Calls update(t, i) for every element i of every tensor t in the table.
template <typename Update>
__device__ __forceinline__ void for_each_chunk(const MultiTensorTable& table, Update&& update) {
  const int64_t chunks = table.first_chunk[table.count];
  for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const int t = tensor_of_chunk(table, chunk);
    const int64_t begin = (chunk - table.first_chunk[t]) * kMultiTensorChunk;
    const int64_t end = begin + kMultiTensorChunk < table.numel[t] ? begin + kMultiTensorChunk : table.numel[t];
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) update(t, i);
  }
}

template <typename T, bool Momentum>
__global__ void __launch_bounds__(kThreads) multi_sgd_kernel(MultiTensorTable table, fn::SgdStep<compute_t<T>> step) {
  using C = compute_t<T>;
  for_each_chunk(table, [&](int t, int64_t i) {
    T* param = static_cast<T*>(table.data[0][t]) + i;
    const T* grad = static_cast<const T*>(table.data[1][t]) + i;
    C value = static_cast<C>(*param);
    C buffer = C(0);
    if constexpr (Momentum) buffer = static_cast<C>(static_cast<T*>(table.data[2][t])[i]);
    step(value, static_cast<C>(*grad), buffer);
    *param = static_cast<T>(value);
    if constexpr (Momentum) static_cast<T*>(table.data[2][t])[i] = static_cast<T>(buffer);
  });
}

template <typename T, bool Amsgrad>
__global__ void __launch_bounds__(kThreads) multi_adam_kernel(MultiTensorTable table, fn::AdamStep<compute_t<T>> step) {
  using C = compute_t<T>;
  for_each_chunk(table, [&](int t, int64_t i) {
    T* param = static_cast<T*>(table.data[0][t]) + i;
    const T* grad = static_cast<const T*>(table.data[1][t]) + i;
    T* exp_avg = static_cast<T*>(table.data[2][t]) + i;
    T* exp_avg_sq = static_cast<T*>(table.data[3][t]) + i;
    C value = static_cast<C>(*param);
    C first = static_cast<C>(*exp_avg);
    C second = static_cast<C>(*exp_avg_sq);
    C maximum = C(0);
    if constexpr (Amsgrad) maximum = static_cast<C>(static_cast<T*>(table.data[4][t])[i]);
    step(value, static_cast<C>(*grad), first, second, maximum);
    *param = static_cast<T>(value);
    *exp_avg = static_cast<T>(first);
    *exp_avg_sq = static_cast<T>(second);
    if constexpr (Amsgrad) static_cast<T*>(table.data[4][t])[i] = static_cast<T>(maximum);
  });
}

unsigned blocks_for(const MultiTensorTable& table) {
  const int64_t chunks = table.first_chunk[table.count];
  return static_cast<unsigned>(chunks < 65535 ? chunks : 65535);
}

}  // namespace

int launch_multi_sgd_step(DType dtype, const MultiTensorTable& table, const SgdStepAttrs& attrs, void* stream) {
  if (table.count == 0 || table.first_chunk[table.count] == 0) return 0;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  return dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const fn::SgdStep<C> step = fn::make_sgd_step<C>(attrs.lr, attrs.momentum, attrs.dampening, attrs.weight_decay,
                                                     attrs.nesterov, attrs.first_step, attrs.maximize);
    if (step.use_momentum) {
      multi_sgd_kernel<T, true><<<blocks_for(table), kThreads, 0, cuda_stream>>>(table, step);
    } else {
      multi_sgd_kernel<T, false><<<blocks_for(table), kThreads, 0, cuda_stream>>>(table, step);
    }
    return static_cast<int>(cudaGetLastError());
  });
}

int launch_multi_adam_step(DType dtype, const MultiTensorTable& table, const AdamStepAttrs& attrs, void* stream) {
  if (table.count == 0 || table.first_chunk[table.count] == 0) return 0;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  return dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const fn::AdamStep<C> step = fn::make_adam_step<C>(attrs.lr, attrs.beta1, attrs.beta2, attrs.eps,
                                                       attrs.weight_decay, attrs.step, attrs.amsgrad, attrs.decoupled,
                                                       attrs.maximize);
    if (step.amsgrad) {
      multi_adam_kernel<T, true><<<blocks_for(table), kThreads, 0, cuda_stream>>>(table, step);
    } else {
      multi_adam_kernel<T, false><<<blocks_for(table), kThreads, 0, cuda_stream>>>(table, step);
    }
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace ember::cuda
