// The matrices of a batch [*, rows, cols] as Eigen matrices: inputs read through any strides
// (transposed, expanded, sliced), outputs written into the dispatcher's fresh dense outputs.
#pragma once

#include <Eigen/Dense>

#include "runtime/tensor.h"

namespace ember::cpu {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// How many matrices `t` holds: the product of its batch dims.
inline int64_t matrix_count(const Tensor& t) {
  int64_t count = 1;
  for (int d = 0; d + 2 < t.dim(); ++d) count *= t.sizes()[d];
  return count;
}

// Where matrix `index` (row-major over the batch dims) starts, in elements from t's data pointer;
// with `trailing` = 1, where vector `index` of a [*, length] tensor starts.
inline int64_t matrix_offset(const Tensor& t, int64_t index, int trailing = 2) {
  int64_t offset = 0;
  for (int d = t.dim() - trailing - 1; d >= 0; --d) {
    offset += (index % t.sizes()[d]) * t.strides()[d];
    index /= t.sizes()[d];
  }
  return offset;
}

template <typename T>
RowMatrix<T> load_matrix(const Tensor& t, int64_t index) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t row_stride = t.strides()[t.dim() - 2], column_stride = t.strides()[t.dim() - 1];
  RowMatrix<T> matrix(rows, cols);
  if (rows * cols == 0) return matrix;
  const T* start = t.data_ptr<T>() + matrix_offset(t, index);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) matrix(i, j) = start[i * row_stride + j * column_stride];
  return matrix;
}

// Matrix `index` of a dense output [*, rows, cols] (the dispatcher allocates outputs contiguous).
template <typename T>
Eigen::Map<RowMatrix<T>> output_matrix(const Tensor& t, int64_t index) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  T* start = rows * cols == 0 ? nullptr : t.data_ptr<T>() + index * rows * cols;
  return Eigen::Map<RowMatrix<T>>(start, rows, cols);
}

}  // namespace ember::cpu
