// Host-side entry point of the CUDA running sum (scan.cu). Plain C++: runtime/cuda/scan_cuda_ops.cpp
// lays the input out densely as [outer, length, inner] (the scanned dim in the middle) and passes
// raw pointers; the output has the same dense layout.
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

// output[o, r, i] = input[o, 0, i] + ... + input[o, r, i] (from the end, input[o, r, i] + ... +
// input[o, length - 1, i], when `reverse`). Floating inputs keep their dtype and accumulate in
// double, integers and bool give int64 (wrapping), as the CPU kernel. Returns the cudaError_t.
int launch_cumsum(DType dtype, const void* input, void* output, const ScanLayout& layout, bool reverse);

}  // namespace ember::cuda
