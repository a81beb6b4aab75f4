// linalg_eigh on the CPU: Eigen's SelfAdjointEigenSolver (tridiagonalization, then implicit
// symmetric QR steps) of each matrix in the input's dtype. The solver reads the lower triangle;
// for UPLO "U" it gets the transpose, whose lower triangle is the input's upper one.
// GCC 12's avx512fintrin.h initializes a variable with itself on purpose, and -Wmaybe-uninitialized
// reports it wherever Eigen's AVX-512 code is inlined (kernels/cpu/gemm_library.cpp says more).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <Eigen/Eigenvalues>

#include "kernels/cpu/linalg_qr_eigh_svd_kernels.h"
#include "kernels/cpu/parallel_for.h"

namespace ember::cpu {

namespace {

template <typename T>
void eigh_typed(const Tensor& input, TensorList& outputs, bool upper, bool compute_v) {
  const int64_t n = input.sizes()[input.dim() - 1];
  const int64_t count = matrix_count(input);
  if (n == 0) return;
  const bool parallel = count > 1 && count * n * n >= kParallelGrain && get_num_threads() > 1;
  std::vector<char> failed(static_cast<size_t>(count), 0);
  parallel_for(count, parallel, [&](int64_t index) {
    MatrixOf<T> a = read_matrix<T>(input, index);
    if (upper) a.transposeInPlace();
    const Eigen::SelfAdjointEigenSolver<MatrixOf<T>> solver(
        a, compute_v ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
    if (solver.info() != Eigen::Success) {
      failed[static_cast<size_t>(index)] = 1;  // thrown below, outside the parallel region
      return;
    }
    write_vector<T>(solver.eigenvalues(), outputs[0], index);
    if (compute_v) write_matrix<T>(solver.eigenvectors(), outputs[1], index);
  });
  for (int64_t index = 0; index < count; ++index)
    check(!failed[static_cast<size_t>(index)],
          "linalg.eigh: the algorithm failed to converge for matrix {} of the batch (shape {}): the input is "
          "ill-conditioned, has too many repeated eigenvalues or holds inf / NaN",
          index, input.sizes());
}

}  // namespace

void linalg_eigh_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const bool upper = call.attrs.get<bool>("upper");
  const bool compute_v = call.attrs.get<bool>("compute_v");
  for_float_dtype(input.dtype(), [&]<typename T>() { eigh_typed<T>(input, outputs, upper, compute_v); });
}

}  // namespace ember::cpu
