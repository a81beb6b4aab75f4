// Host-side entry points of the CUDA factories that compute each element from its index:
// arange, linspace and the Philox-driven rand, randn, randint and dropout (kernels/cuda/random.cu).
// Element i draws from the same Philox words as the CPU kernels (kernels/cpu/copy_kernels.cpp,
// kernels/cpu/dropout_kernels.cpp), so a seed gives the same numbers on both devices.
// Plain C++, no CUDA header; each launcher returns the launch's cudaError_t as an int.
#pragma once

#include "kernels/cuda/elementwise.h"

namespace ember::cuda {

// out[i] = start + i * step, in `dtype` through its compute type (any dtype).
int launch_arange(DType dtype, void* out, double start, double step, const LaunchShape& shape);
// PyTorch's symmetric linspace: the first half from start, the rest back from end (any dtype).
int launch_linspace(DType dtype, void* out, double start, double end, int64_t steps, const LaunchShape& shape);
// Uniform [0, 1) from words 2i (and 2i + 1 for float64) of stream (seed, offset); floating dtypes.
int launch_rand(DType dtype, void* out, uint64_t seed, uint64_t offset, const LaunchShape& shape);
// Standard normal by Box-Muller on words 2i, 2i + 1, computed in double; floating dtypes.
int launch_randn(DType dtype, void* out, uint64_t seed, uint64_t offset, const LaunchShape& shape);
// low + (64 bits of words 2i, 2i + 1) mod (high - low); any dtype.
int launch_randint(DType dtype, void* out, int64_t low, int64_t high, uint64_t seed, uint64_t offset,
                   const LaunchShape& shape);
// mask[i] = word i of (seed, offset) keeps element i; y[i] = mask[i] ? x[i] * scale : 0, with
// `input` read through its strides; floating dtypes.
int launch_dropout(DType dtype, void* out, bool* mask, const StridedOperand& input, double p, uint64_t seed,
                   uint64_t offset, const LaunchShape& shape);

}  // namespace ember::cuda
