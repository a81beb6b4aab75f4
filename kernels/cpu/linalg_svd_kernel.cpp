// linalg_svd on the CPU: Eigen's BDCSVD (divide and conquer, LAPACK gesdd's method; it switches
// to one-sided Jacobi below 16 columns) of each matrix in the input's dtype. Vh is V transposed.
// GCC 12's avx512fintrin.h initializes a variable with itself on purpose, and -Wmaybe-uninitialized
// reports it wherever Eigen's AVX-512 code is inlined (kernels/cpu/gemm_library.cpp says more).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <Eigen/SVD>
#include <vector>

#include "kernels/cpu/linalg_qr_eigh_svd_kernels.h"
#include "kernels/cpu/parallel_for.h"

namespace ember::cpu {

namespace {

template <typename T>
void svd_typed(const Tensor& input, TensorList& outputs, bool full_matrices, bool compute_uv) {
  const int64_t rows = input.sizes()[input.dim() - 2], cols = input.sizes()[input.dim() - 1];
  const int64_t count = matrix_count(input);
  const bool parallel = count > 1 && count * rows * cols >= kParallelGrain && get_num_threads() > 1;
  const unsigned int options = !compute_uv     ? 0u
                               : full_matrices ? Eigen::ComputeFullU | Eigen::ComputeFullV
                                               : Eigen::ComputeThinU | Eigen::ComputeThinV;
  std::vector<char> failed(static_cast<size_t>(count), 0);
  parallel_for(count, parallel, [&](int64_t index) {
    if (rows == 0 || cols == 0) {  // no singular values; the full bases are identities
      if (compute_uv) {
        write_matrix<T>(
            MatrixOf<T>::Identity(outputs[0].sizes()[outputs[0].dim() - 2], outputs[0].sizes()[outputs[0].dim() - 1]),
            outputs[0], index);
        write_matrix<T>(
            MatrixOf<T>::Identity(outputs[2].sizes()[outputs[2].dim() - 2], outputs[2].sizes()[outputs[2].dim() - 1]),
            outputs[2], index);
      }
      return;
    }
    const MatrixOf<T> a = read_matrix<T>(input, index);
    // Eigen leaves the outputs unwritten for inf / NaN input (BDCSVD) or fills them with NaN
    // (its Jacobi path below 16 columns); LAPACK's gesdd, which PyTorch calls, refuses it.
    if (!a.allFinite()) {
      failed[static_cast<size_t>(index)] = 1;  // thrown below, outside the parallel region
      return;
    }
    const Eigen::BDCSVD<MatrixOf<T>> svd(a, options);
    if (svd.info() != Eigen::Success) {
      failed[static_cast<size_t>(index)] = 2;
      return;
    }
    write_vector<T>(svd.singularValues(), outputs[1], index);
    if (!compute_uv) return;
    write_matrix<T>(svd.matrixU(), outputs[0], index);
    write_matrix<T>(svd.matrixV().transpose(), outputs[2], index);
  });
  for (int64_t index = 0; index < count; ++index)
    check(!failed[static_cast<size_t>(index)],
          "linalg.svd: The algorithm failed to converge because the input matrix {} (matrix {} of the batch, shape {})",
          failed[static_cast<size_t>(index)] == 1 ? "contained non-finite values" : "is ill-conditioned", index,
          input.sizes());
}

}  // namespace

void linalg_svd_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const bool full_matrices = call.attrs.get<bool>("full_matrices");
  const bool compute_uv = call.attrs.get<bool>("compute_uv");
  for_float_dtype(input.dtype(), [&]<typename T>() { svd_typed<T>(input, outputs, full_matrices, compute_uv); });
}

}  // namespace ember::cpu
