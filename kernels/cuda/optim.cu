// CUDA fused optimizer steps: a grid-stride pass over one parameter that loads the parameter, its
// gradient and its state once, applies fn::SgdStep / fn::AdamStep (kernels/optim_functors.h) in the
// compute type (fp32 for 16-bit parameters) and stores the results. Elements are independent, so
// the result is deterministic; it matches the CPU to fp32 rounding (nvcc may contract to FMA).
#include <cuda_runtime_api.h>

#include "kernels/cuda/optim.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/half_types.h"
#include "kernels/optim_functors.h"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

// pointwise_kernel.cuh's compute type (fp32 for 16-bit floats) and floating-dtype dispatch.
using detail::compute_t;
using detail::dispatch_floating;

// Pointers to element `linear` (row-major) of the first N tensors.
template <typename T, int N>
__device__ __forceinline__ void element_pointers(const StepTensors& tensors, int64_t linear, T* (&at)[N]) {
  if (tensors.contiguous) {
    for (int k = 0; k < N; ++k) at[k] = static_cast<T*>(tensors.data[k]) + linear;
    return;
  }
  int64_t offsets[N] = {};
  for (int d = tensors.dims - 1; d >= 0; --d) {
    const int64_t coordinate = linear % tensors.sizes[d];
    linear /= tensors.sizes[d];
    for (int k = 0; k < N; ++k) offsets[k] += coordinate * tensors.strides[k][d];
  }
  for (int k = 0; k < N; ++k) at[k] = static_cast<T*>(tensors.data[k]) + offsets[k];
}

template <typename T, bool Momentum>
__global__ void sgd_kernel(StepTensors tensors, fn::SgdStep<compute_t<T>> step) {
  using C = compute_t<T>;
  constexpr int N = Momentum ? 3 : 2;
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < tensors.numel; i += stride) {
    T* at[N];
    element_pointers<T, N>(tensors, i, at);
    C param = static_cast<C>(*at[0]);
    C buffer = Momentum ? static_cast<C>(*at[N - 1]) : C(0);
    step(param, static_cast<C>(*at[1]), buffer);
    *at[0] = static_cast<T>(param);
    if constexpr (Momentum) *at[2] = static_cast<T>(buffer);
  }
}

template <typename T, bool Amsgrad>
__global__ void adam_kernel(StepTensors tensors, fn::AdamStep<compute_t<T>> step) {
  using C = compute_t<T>;
  constexpr int N = Amsgrad ? 5 : 4;
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < tensors.numel; i += stride) {
    T* at[N];
    element_pointers<T, N>(tensors, i, at);
    C param = static_cast<C>(*at[0]);
    C exp_avg = static_cast<C>(*at[2]);
    C exp_avg_sq = static_cast<C>(*at[3]);
    C max_exp_avg_sq = Amsgrad ? static_cast<C>(*at[N - 1]) : C(0);
    step(param, static_cast<C>(*at[1]), exp_avg, exp_avg_sq, max_exp_avg_sq);
    *at[0] = static_cast<T>(param);
    *at[2] = static_cast<T>(exp_avg);
    *at[3] = static_cast<T>(exp_avg_sq);
    if constexpr (Amsgrad) *at[4] = static_cast<T>(max_exp_avg_sq);
  }
}

unsigned blocks_for(int64_t numel) {
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

}  // namespace

int launch_sgd_step(DType dtype, const StepTensors& tensors, const SgdStepAttrs& attrs, void* stream) {
  if (tensors.numel == 0) return 0;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  return dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const fn::SgdStep<C> step = fn::make_sgd_step<C>(attrs.lr, attrs.momentum, attrs.dampening, attrs.weight_decay,
                                                     attrs.nesterov, attrs.first_step, attrs.maximize);
    if (step.use_momentum) {
      sgd_kernel<T, true><<<blocks_for(tensors.numel), kThreads, 0, cuda_stream>>>(tensors, step);
    } else {
      sgd_kernel<T, false><<<blocks_for(tensors.numel), kThreads, 0, cuda_stream>>>(tensors, step);
    }
    return static_cast<int>(cudaGetLastError());
  });
}

int launch_adam_step(DType dtype, const StepTensors& tensors, const AdamStepAttrs& attrs, void* stream) {
  if (tensors.numel == 0) return 0;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  return dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const fn::AdamStep<C> step = fn::make_adam_step<C>(attrs.lr, attrs.beta1, attrs.beta2, attrs.eps,
                                                       attrs.weight_decay, attrs.step, attrs.amsgrad, attrs.decoupled,
                                                       attrs.maximize);
    if (step.amsgrad) {
      adam_kernel<T, true><<<blocks_for(tensors.numel), kThreads, 0, cuda_stream>>>(tensors, step);
    } else {
      adam_kernel<T, false><<<blocks_for(tensors.numel), kThreads, 0, cuda_stream>>>(tensors, step);
    }
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace ember::cuda
