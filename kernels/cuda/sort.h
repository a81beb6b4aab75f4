// Host-side entry point of the CUDA sort and topk (sort.cu). Plain C++: runtime/cuda/sort_cuda_ops.cpp
// lays the input out densely as [outer, length, inner] (the sorted dim in the middle) and passes
// raw pointers; the outputs are dense [outer, kept, inner].
#pragma once

#include <cstdint>

namespace ember {
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda {

struct SortLayout {
  int64_t outer = 1;
  int64_t length = 1;  // the input's sorted dim
  int64_t kept = 1;    // the outputs' sorted dim: length for sort, k for topk (1 for a 0-d input)
  int64_t inner = 1;
  void* stream = nullptr;  // cudaStream_t
};

// Rows up to this length are sorted in shared memory (2048 padded slots of an 8-byte position and
// an up to 8-byte key: 32 KiB, under the 48 KiB a block gets without opting in); longer ones in a
// global workspace the caller allocates.
inline constexpr int64_t kSharedSortLength = 2048;

// The bytes of global workspace launch_sort needs for `layout`; 0 when every row fits in shared
// memory.
int64_t sort_workspace_bytes(DType dtype, const SortLayout& layout);

// For each row (o, i): orders its `length` elements by fn::element_before (kernels/sort_order.h:
// NaN largest, ties by position, so the result is a stable sort's) and writes the first `kept`
// values and their int64 positions. `workspace` holds sort_workspace_bytes(dtype, layout) bytes
// (null when that is 0). Returns the cudaError_t.
int launch_sort(DType dtype, const void* input, void* values, void* indices, const SortLayout& layout, bool descending,
                void* workspace);

}  // namespace ember::cuda
