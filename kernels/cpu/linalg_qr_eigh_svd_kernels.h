// CPU kernels of the decomposition ops linalg_qr, linalg_eigh and linalg_svd (Eigen, in the
// input's dtype, one matrix at a time), and the strided matrix access they share. Attributes as in
// runtime/ops/linalg_qr_ops.cpp, linalg_eigh_ops.cpp and linalg_svd_ops.cpp.
#pragma once

#include <Eigen/Dense>

#include "kernels/cpu/linalg_solve_matrices.h"  // matrix_count, matrix_offset

#include "runtime/ops/registry.h"

namespace ember::cpu {

// qr: Eigen's HouseholderQR (R's diagonal may be negative, as LAPACK's geqrf gives it).
void linalg_qr_kernel(const OpCall& call, TensorList& outputs);
// eigh: Eigen's SelfAdjointEigenSolver on the chosen triangle; eigenvalues ascending.
void linalg_eigh_kernel(const OpCall& call, TensorList& outputs);
// svd: Eigen's BDCSVD (Jacobi below 16 columns); singular values descending.
void linalg_svd_kernel(const OpCall& call, TensorList& outputs);

template <typename T>
using MatrixOf = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

// Matrix `index` of `tensor` read through its strides (any layout, expanded included).
template <typename T>
MatrixOf<T> read_matrix(const Tensor& tensor, int64_t index) {
  const int64_t rows = tensor.sizes()[tensor.dim() - 2], cols = tensor.sizes()[tensor.dim() - 1];
  const int64_t row_stride = tensor.strides()[tensor.dim() - 2], col_stride = tensor.strides()[tensor.dim() - 1];
  const T* data = static_cast<const T*>(tensor.raw_data_ptr()) + matrix_offset(tensor, index);
  MatrixOf<T> matrix(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) matrix(i, j) = data[i * row_stride + j * col_stride];
  return matrix;
}

// Writes `matrix` as matrix `index` of `tensor` ([*, rows, cols]).
template <typename T, typename Matrix>
void write_matrix(const Matrix& matrix, const Tensor& tensor, int64_t index) {
  T* data = static_cast<T*>(tensor.raw_data_ptr()) + matrix_offset(tensor, index);
  const int64_t row_stride = tensor.strides()[tensor.dim() - 2], col_stride = tensor.strides()[tensor.dim() - 1];
  for (int64_t i = 0; i < matrix.rows(); ++i)
    for (int64_t j = 0; j < matrix.cols(); ++j) data[i * row_stride + j * col_stride] = matrix(i, j);
}

// Writes `vector` as vector `index` of `tensor` ([*, length]).
template <typename T, typename Vector>
void write_vector(const Vector& vector, const Tensor& tensor, int64_t index) {
  T* data = static_cast<T*>(tensor.raw_data_ptr()) + matrix_offset(tensor, index, 1);
  const int64_t stride = tensor.strides()[tensor.dim() - 1];
  for (int64_t i = 0; i < vector.size(); ++i) data[i * stride] = vector(i);
}

// Runs body.template operator()<T>() for the float32 or float64 input (the shape rules admit
// no other dtype).
template <typename Body>
void for_float_dtype(DType dtype, Body&& body) {
  if (dtype == DType::Float64)
    body.template operator()<double>();
  else
    body.template operator()<float>();
}

}  // namespace ember::cpu
