// linalg_qr on the CPU: Eigen's Householder QR of each matrix in the input's dtype. Q comes from
// applying the reflectors to the first columns of the identity, R from the packed upper triangle.
// GCC 12's avx512fintrin.h initializes a variable with itself on purpose, and -Wmaybe-uninitialized
// reports it wherever Eigen's AVX-512 code is inlined (kernels/cpu/gemm_library.cpp says more).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <Eigen/QR>

#include "kernels/cpu/linalg_qr_eigh_svd_kernels.h"
#include "kernels/cpu/parallel_for.h"

namespace ember::cpu {

namespace {

// Modes as runtime/ops/linalg_qr_ops.cpp numbers them.
constexpr int64_t kComplete = 1;
constexpr int64_t kROnly = 2;

template <typename T>
void qr_typed(const Tensor& input, TensorList& outputs, int64_t mode) {
  const int64_t rows = input.sizes()[input.dim() - 2], cols = input.sizes()[input.dim() - 1];
  const int64_t count = matrix_count(input);
  const int64_t r_rows = outputs[1].sizes()[outputs[1].dim() - 2];
  const bool want_q = mode != kROnly;
  const int64_t q_cols = want_q ? outputs[0].sizes()[outputs[0].dim() - 1] : 0;
  const bool parallel = count > 1 && count * rows * cols >= kParallelGrain && get_num_threads() > 1;
  parallel_for(count, parallel, [&](int64_t index) {
    if (rows == 0 || cols == 0) {  // nothing to factor: R is empty or zero, Q the identity
      write_matrix<T>(MatrixOf<T>::Zero(r_rows, cols), outputs[1], index);
      if (want_q) write_matrix<T>(MatrixOf<T>::Identity(rows, q_cols), outputs[0], index);
      return;
    }
    const MatrixOf<T> a = read_matrix<T>(input, index);
    const Eigen::HouseholderQR<MatrixOf<T>> qr(a);
    const MatrixOf<T> r = qr.matrixQR().topRows(r_rows).template triangularView<Eigen::Upper>();
    write_matrix<T>(r, outputs[1], index);
    if (!want_q) return;
    const MatrixOf<T> q = qr.householderQ() * MatrixOf<T>::Identity(rows, q_cols);
    write_matrix<T>(q, outputs[0], index);
  });
}

}  // namespace

void linalg_qr_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const int64_t mode = call.attrs.get<int64_t>("mode");
  for_float_dtype(input.dtype(), [&]<typename T>() { qr_typed<T>(input, outputs, mode); });
}

}  // namespace ember::cpu
