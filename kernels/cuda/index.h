// Host-side entry points of the CUDA gathers and scatter-adds (kernels/cuda/index_*.cu): embedding,
// index_select, gather, one_hot and embedding_backward, index_add, scatter_add. Plain C++ (no CUDA
// header, no fmt): runtime/cuda/index_cuda_ops.cpp and scatter_cuda_ops.cpp describe tensors as raw
// pointers, sizes and strides. Every launcher returns the launch's cudaError_t as an int.
//
// Index values are data, so the host cannot check them without a sync. The kernels never read or
// write out of bounds: an out-of-range index produces a zero (gathers) or is dropped (scatters),
// and is written to the device's error record (kernels/cuda/device_error.h), which the host
// raises at its next synchronization, or right after the op with EMBER_CUDA_CHECK_INDICES=1
// (see runtime/cuda/index_cuda_common.h).
#pragma once

#include <cstdint>

#include "kernels/cuda/device_error.h"  // IndexFlag
#include "kernels/cuda/elementwise.h"   // DType, kMaxDims

namespace ember::cuda {

// Rows of contiguous bytes selected by an index list, for embedding and index_select:
//   out[o, k, :] = source[o, indices[k], :]   with o < outer, k < count, rows of row_bytes bytes.
// source is [outer, source_size, row] and out [outer, count, row], both contiguous. A dtype-free
// byte copy, vectorized to the widest word that divides the row and the pointers.
struct SelectRows {
  void* out = nullptr;
  const void* source = nullptr;
  const void* indices = nullptr;  // count values, contiguous
  bool indices_int64 = true;      // else int32
  int64_t outer = 1;
  int64_t source_size = 0;        // the valid index range [0, source_size)
  int64_t count = 0;
  int64_t row_bytes = 0;
};
int launch_select_rows(const SelectRows& select, IndexFlag flag, void* stream);

// Only checks `count` indices (int64 or int32) against [0, limit), recording the first bad one
// found: for a selection or an add with nothing to copy (rows of 0 bytes, no outer slices), which
// still rejects the indices the CPU rejects.
int launch_check_indices(const void* indices, bool indices_int64, int64_t count, int64_t limit, IndexFlag flag,
                         void* stream);

// Slices added at an index list, for embedding_backward and index_add:
//   accumulator[o, indices[k], i] += source[o, k, i]   (atomicAdd: the order of additions to one
// element is not fixed, so float results may differ in the last bits from run to run).
// accumulator is [outer, target_size, inner] in accumulator_dtype, source [outer, count, inner] in
// source_dtype; both contiguous. accumulator_dtype is source_dtype, or Float32 for 16-bit sources.
struct AddSlices {
  void* accumulator = nullptr;
  DType accumulator_dtype{};
  const void* source = nullptr;
  DType source_dtype{};
  const void* indices = nullptr;  // count values, contiguous
  bool indices_int64 = true;
  int64_t outer = 1;
  int64_t target_size = 0;
  int64_t count = 0;
  int64_t inner = 1;
};
int launch_add_slices(const AddSlices& add, IndexFlag flag, void* stream);

// The strided walk shared by gather and scatter_add: every position p of the int64 index tensor
// (shape `sizes`) names an element of the indexed tensor at p with p[dim] = index[p].
//   gather:      out[p] = indexed[p with p[dim] = index[p]]          (out contiguous, index's shape)
//   scatter_add: indexed[p with p[dim] = index[p]] += plain[p]       (indexed: the accumulator)
// indexed_strides has 0 at dim; indexed_dim_stride is its real stride there. A 0-d index has
// dims 0, limit 1 and indexed_dim_stride 0.
struct IndexedWalk {
  int dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t numel = 0;
  const int64_t* index = nullptr;
  int64_t index_strides[kMaxDims] = {};
  int64_t indexed_strides[kMaxDims] = {};
  int64_t indexed_dim_stride = 0;
  int64_t limit = 0;  // valid index values [0, limit)
  int64_t plain_strides[kMaxDims] = {};  // scatter_add's src
};
// out (contiguous, `element_bytes` per element) gathered from `indexed`; a byte copy.
int launch_gather(void* out, const void* indexed, int element_bytes, const IndexedWalk& walk, IndexFlag flag,
                  void* stream);
// accumulator (accumulator_dtype, see AddSlices) gains plain (source_dtype) through the walk.
int launch_scatter_add(void* accumulator, DType accumulator_dtype, const void* plain, DType source_dtype,
                       const IndexedWalk& walk, IndexFlag flag, void* stream);

// out [count, classes] int64, already zeroed: out[k, indices[k]] = 1.
int launch_one_hot(int64_t* out, const int64_t* indices, int64_t count, int64_t classes, IndexFlag flag,
                   void* stream);

}  // namespace ember::cuda
