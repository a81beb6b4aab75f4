// Turns CUDA runtime and cuBLAS status codes into ember::Error with the library's own message and
// the file:line of the failing call. Functions, not macros: nothing is declared behind the caller.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <source_location>

namespace ember::cuda {

// Throws ember::Error "CUDA error at file:line: <cudaGetErrorString>" unless status is cudaSuccess.
// The sticky error state is cleared first so that later calls are not blamed for this one.
void cuda_check(cudaError_t status, std::source_location where = std::source_location::current());

// The same for cuBLAS / cuBLASLt status codes.
void cublas_check(cublasStatus_t status, std::source_location where = std::source_location::current());

}  // namespace ember::cuda
