// What the solve family's CUDA op files share (defined in linalg_lu_cuda_ops.cpp): cuSOLVER is
// column-major, so matrices go in as dense copies of their transposes and come back transposed
// again; factorizations report a bad matrix through a device info per matrix, read back here.
#pragma once

#include <library_types.h>

#include <vector>

#include "runtime/cuda/linalg_cuda_common.h"
#include "runtime/tensor.h"

namespace ember::cuda {

// A dense copy of every matrix of `t` in column-major order (the row-major [*, cols, rows]
// transpose): a fresh buffer cuSOLVER may overwrite.
Tensor column_major_copy(const Tensor& t);
// Writes column-major matrices (a dense [*, cols, rows] buffer) into dense row-major `out`.
void store_row_major(const Tensor& column_major, const Tensor& out);
// Copies `source` (any strides, any dtype) into dense `target` of the same shape.
void copy_into(const Tensor& source, const Tensor& target);

}  // namespace ember::cuda
