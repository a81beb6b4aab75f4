// EMBER_HOST_DEVICE marks functions that compile for both the CPU and CUDA (nvcc, NVRTC);
// EMBER_FORCE_INLINE makes GCC inline a function into every host loop that calls it.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EMBER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EMBER_HOST_DEVICE inline
#endif

// Loops vectorize only if the functions they call are inlined into them, and at their size GCC's
// inliner would rather call them (measured: tanh stayed a call per element).
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#define EMBER_FORCE_INLINE [[gnu::always_inline]]
#else
#define EMBER_FORCE_INLINE
#endif
