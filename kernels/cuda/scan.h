// Host-side entry points of the CUDA running reductions (scan.cu). Plain C++:
// runtime/cuda/scan_cuda_ops.cpp lays the input out densely as [outer, length, inner] (the scanned
// dim in the middle) and passes raw pointers; the outputs have the same dense layout.
#pragma once

#include <cstdint>

namespace ember {
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda {

struct ScanLayout {
  int64_t outer = 1;
  int64_t length = 1;  // the scanned dim
  int64_t inner = 1;
  void* stream = nullptr;  // cudaStream_t
};

// Each returns the cudaError_t of its launch. One thread walks one line in order, as the CPU
// kernels (kernels/cpu/scan_kernels.h) do, with the same functors and accumulators.

// output[o, r, i] = input[o, 0, i] + ... + input[o, r, i] (from the end, input[o, r, i] + ... +
// input[o, length - 1, i], when `reverse`). Floating inputs keep their dtype and accumulate in
// double, integers and bool give int64 (wrapping), as the CPU kernel.
int launch_cumsum(DType dtype, const void* input, void* output, const ScanLayout& layout, bool reverse);
// The running product, dtypes and accumulators as launch_cumsum.
int launch_cumprod(DType dtype, const void* input, void* output, const ScanLayout& layout);
// The running maximum (`max`) or minimum in the input's dtype, and its int64 index along the line.
int launch_cumextremum(DType dtype, const void* input, void* values, int64_t* indices, const ScanLayout& layout,
                       bool max);
// The running log-add-exp in double for floating dtypes (from the end when `reverse`).
int launch_logcumsumexp(DType dtype, const void* input, void* output, const ScanLayout& layout, bool reverse);

}  // namespace ember::cuda
