// The CUDA sort and topk: one block per row runs a bitonic sorting network over the row padded to
// a power of two, on (key, position) pairs in shared memory, or for rows longer than
// kSharedSortLength in a global workspace slice per block. The network's compare-exchange uses
// fn::element_before, a total order (ties broken by position), so it produces exactly the CPU's
// stable sort. Simple and correct rather than fast: O(n log^2 n) work per row, strided reads when
// inner > 1, and long rows go through global memory. Not yet run on a GPU (docs/ARCHITECTURE.md).
#include "kernels/cuda/reduce_common.cuh"
#include "kernels/cuda/sort.h"
#include "kernels/sort_order.h"

namespace ember::cuda {

namespace {

constexpr int kMaxThreads = 1024;
// Blocks of the global-workspace path: each loops over rows, so this bounds the workspace.
constexpr int64_t kWorkspaceBlocks = 128;

// The row padded to a power of two, the bitonic network's size.
__host__ __device__ int64_t padded_length(int64_t length) {
  int64_t padded = 1;
  while (padded < length) padded *= 2;
  return padded;
}

int64_t slot_bytes(DType dtype) {
  int64_t key_bytes = 0;
  detail::dispatch_all(dtype, [&](auto zero) { key_bytes = sizeof(detail::compute_t<decltype(zero)>); });
  return 8 + key_bytes;  // an int64 position and a key
}

bool uses_workspace(const SortLayout& layout) { return layout.length > kSharedSortLength; }

int64_t row_count(const SortLayout& layout) { return layout.outer * layout.inner; }

int64_t grid_of(const SortLayout& layout) {
  const int64_t rows = row_count(layout);
  return uses_workspace(layout) ? (rows < kWorkspaceBlocks ? rows : kWorkspaceBlocks) : detail::grid_for(rows);
}

// Padding slots (position -1) come after every element.
template <typename Key>
__device__ __forceinline__ bool slot_before(Key a, int64_t a_position, Key b, int64_t b_position, bool descending) {
  if (a_position < 0) return false;
  if (b_position < 0) return true;
  return fn::element_before(a, a_position, b, b_position, descending);
}

// Sorts one row into positions[0, padded) (keys alongside) with the whole block. Every thread
// runs the same loop bounds, so all reach each __syncthreads.
template <typename T, typename Key>
__device__ void sort_row(const T* row, int64_t stride, int64_t length, int64_t padded, Key* keys, int64_t* positions,
                         bool descending) {
  for (int64_t s = threadIdx.x; s < padded; s += blockDim.x) {
    positions[s] = s < length ? s : -1;
    keys[s] = s < length ? static_cast<Key>(detail::load(row, s * stride)) : Key{};
  }
  __syncthreads();
  // Bitonic network: merge runs of `run` slots, alternating direction between neighbouring runs
  // so that each pair forms a bitonic sequence for the next, larger merge.
  for (int64_t run = 2; run <= padded; run *= 2) {
    for (int64_t gap = run / 2; gap > 0; gap /= 2) {
      for (int64_t s = threadIdx.x; s < padded; s += blockDim.x) {
        const int64_t partner = s ^ gap;
        if (partner <= s) continue;
        const bool forward = (s & run) == 0;
        // In a forward run the earlier slot must hold the element that comes first.
        const int64_t first = forward ? s : partner;
        const int64_t second = forward ? partner : s;
        const bool exchange = slot_before(keys[second], positions[second], keys[first], positions[first], descending);
        if (exchange) {
          const Key key = keys[s];
          keys[s] = keys[partner];
          keys[partner] = key;
          const int64_t position = positions[s];
          positions[s] = positions[partner];
          positions[partner] = position;
        }
      }
      __syncthreads();
    }
  }
}

template <typename T>
__global__ void sort_rows_kernel(const T* __restrict__ input, T* __restrict__ values, int64_t* __restrict__ indices,
                                 SortLayout layout, bool descending, unsigned char* workspace) {
  using Key = detail::compute_t<T>;
  extern __shared__ __align__(8) unsigned char shared_slots[];
  const int64_t padded = padded_length(layout.length);
  unsigned char* slots = workspace == nullptr ? shared_slots
                                              : workspace + int64_t{blockIdx.x} * padded * (8 + int64_t{sizeof(Key)});
  int64_t* positions = reinterpret_cast<int64_t*>(slots);
  Key* keys = reinterpret_cast<Key*>(slots + padded * 8);
  const int64_t rows = layout.outer * layout.inner;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t o = row / layout.inner;
    const int64_t i = row % layout.inner;
    const T* row_input = input + o * layout.length * layout.inner + i;
    sort_row(row_input, layout.inner, layout.length, padded, keys, positions, descending);
    for (int64_t r = threadIdx.x; r < layout.kept; r += blockDim.x) {
      const int64_t at = o * layout.kept * layout.inner + r * layout.inner + i;
      values[at] = row_input[positions[r] * layout.inner];  // the input's own bits, not the key
      indices[at] = positions[r];
    }
    __syncthreads();  // the next row reuses the slots
  }
}

}  // namespace

int64_t sort_workspace_bytes(DType dtype, const SortLayout& layout) {
  if (!uses_workspace(layout) || row_count(layout) == 0) return 0;
  return grid_of(layout) * padded_length(layout.length) * slot_bytes(dtype);
}

int launch_sort(DType dtype, const void* input, void* values, void* indices, const SortLayout& layout, bool descending,
                void* workspace) {
  if (row_count(layout) == 0 || layout.kept == 0) return 0;
  const int64_t padded = padded_length(layout.length);
  const int threads = static_cast<int>(padded < 32 ? 32 : (padded > kMaxThreads ? kMaxThreads : padded));
  const size_t shared_bytes = uses_workspace(layout) ? 0 : static_cast<size_t>(padded * slot_bytes(dtype));
  const auto blocks = static_cast<unsigned>(grid_of(layout));
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    sort_rows_kernel<T><<<blocks, threads, shared_bytes, stream>>>(
        static_cast<const T*>(input), static_cast<T*>(values), static_cast<int64_t*>(indices), layout, descending,
        static_cast<unsigned char*>(workspace));
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
