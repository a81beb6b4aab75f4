// What the cuSOLVER kernels of linalg_qr, linalg_eigh and linalg_svd share: strided copies between
// ember's row-major batches and cuSOLVER's column-major matrices (one elementwise launch each),
// workspaces from the device caching allocator, and the per-matrix `info` check.
#pragma once

#include <library_types.h>

#include <vector>

#include "runtime/cuda/cusolver_library.h"
#include "runtime/cuda/linalg_cuda_common.h"
#include "runtime/tensor.h"

namespace ember::cuda {

// A batch of matrices in device memory: element (b, i, j) at data + b * batch + i * row + j * column
// (in elements).
struct MatrixBatch {
  void* data = nullptr;
  int64_t batch = 0;
  int64_t row = 0;
  int64_t column = 0;
};

// to(b, i, j) = from(b, i, j) for [count, rows, cols]; both in `dtype`, on `stream`.
void copy_matrices(DType dtype, const MatrixBatch& to, const MatrixBatch& from, int64_t count, int64_t rows,
                   int64_t cols, void* stream);
// to(b, i, j) = value for [count, rows, cols].
void fill_matrices(DType dtype, const MatrixBatch& to, double value, int64_t count, int64_t rows, int64_t cols,
                   void* stream);

// A dense [*, rows, cols] tensor's matrices as a MatrixBatch (row-major).
MatrixBatch row_major(const Tensor& dense);

// One int per factored matrix, where cuSOLVER reports failures; `check_infos` copies them to the
// host once (a sync, as PyTorch's error check makes) and throws naming the op and the matrix.
Tensor info_buffer(int64_t count, Device device);
void check_infos(const Tensor& infos, void* stream, const char* op);

}  // namespace ember::cuda
