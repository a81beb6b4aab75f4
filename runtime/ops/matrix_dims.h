// A tensor's last two dims seen as a matrix, shared by the CPU and CUDA GEMM kernels.
#pragma once

#include <cstdint>

#include "runtime/tensor.h"

namespace ember::ops {

struct MatrixDims {
  int64_t rows, cols, row_stride, col_stride;
};

// A 1-D tensor is a row [1, k] as a left operand and a column [k, 1] as a right operand
// (PyTorch's matmul promotion).
inline MatrixDims matrix_dims(const Tensor& tensor, bool right_operand) {
  const int rank = static_cast<int>(tensor.dim());
  if (rank == 1) {
    const int64_t length = tensor.sizes()[0];
    const int64_t stride = tensor.strides()[0];
    return right_operand ? MatrixDims{length, 1, stride, length} : MatrixDims{1, length, length, stride};
  }
  return {tensor.sizes()[rank - 2], tensor.sizes()[rank - 1], tensor.strides()[rank - 2],
          tensor.strides()[rank - 1]};
}

}  // namespace ember::ops
