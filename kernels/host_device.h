// EMBER_HOST_DEVICE marks functions that compile for both the CPU and CUDA (nvcc, NVRTC).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EMBER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EMBER_HOST_DEVICE inline
#endif
