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

namespace ember::fn {

// a * b + c for the formulas that want a fused multiply-add for speed (the polynomials of
// fast_math.h and fast_trig.h): one rounding where the target has an FMA instruction, two where
// it has none, so a build without -march=native never calls libm's slow software fma. libember
// and the generated code are compiled without contraction (runtime/CMakeLists.txt): every other
// multiply and add rounds on its own, and an FMA happens only where this helper asks for one, the
// same in eager kernels and in fused code (same headers, same flags). float and double only.
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T mul_add(T a, T b, T c) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == sizeof(float)) {  // what nvcc contracts a * b + c into anyway
    return fmaf(a, b, c);
  } else {
    return fma(a, b, c);
  }
#elif defined(__FMA__)
  if constexpr (sizeof(T) == sizeof(float)) {
    return __builtin_fmaf(a, b, c);
  } else {
    return __builtin_fma(a, b, c);
  }
#else
  return a * b + c;
#endif
}

}  // namespace ember::fn
