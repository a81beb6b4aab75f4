// How CUDA layer_norm picks its implementation (ember's kernels or cuDNN), and a micro benchmark
// of both that tools and tests call. Defined in runtime/cuda/norm_cuda_ops.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/dtype.h"

namespace ember::cuda {

// EMBER_LAYER_NORM=ember|cudnn|auto (default auto). auto uses cuDNN only for a device, shape, dtype
// and pass (forward or backward, each on its own: cuDNN may win one and lose the other) where
// benchmark_layer_norm measured it faster than ember's kernels; until both are measured it uses
// ember's. cudnn uses cuDNN wherever cuDNN supports the call and ember's kernels elsewhere
// (float64, missing weight or bias, misaligned pointers, a build without cuDNN).
enum class LayerNormImpl : uint8_t { Ember, Cudnn, Auto };
enum class LayerNormPass : uint8_t { Forward, Backward };

// The implementation EMBER_LAYER_NORM asks for, read at every call (cheap) so tests can change it.
LayerNormImpl layer_norm_impl_from_env();

// Empty when this build and machine can run cuDNN at all; otherwise the reason.
std::string cudnn_unavailable_reason();

// Seconds per call of layer_norm's `pass` (forward: layer_norm with weight and bias, eps 1e-5;
// backward: layer_norm_backward with the weight, all three gradients) on a rows x cols input of
// `dtype` on cuda:`device_index` with implementation `impl` (Ember or Cudnn), averaged over
// `iterations` calls after one warm-up call, timed with CUDA events. cuDNN's time includes what
// the op adds around it (16-bit weight, bias and their gradients converted to and from float32).
// Remembers the result for auto's choice of that pass on that device. Throws ember::Error when
// CUDA is unavailable, or for Cudnn when cuDNN cannot run this shape.
double benchmark_layer_norm(int64_t rows, int64_t cols, DType dtype, LayerNormImpl impl, int iterations,
                            LayerNormPass pass = LayerNormPass::Forward, int device_index = 0);

}  // namespace ember::cuda
