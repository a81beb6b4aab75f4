// Cholesky and triangular solves on the CPU, one matrix at a time in the inputs' dtype.
// GCC 12's avx512fintrin.h initializes a variable with itself on purpose, and -Wmaybe-uninitialized
// reports it wherever Eigen's AVX-512 code is inlined (kernels/cpu/gemm_library.cpp says more).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cmath>

#include "kernels/cpu/linalg_solve_kernels.h"
#include "kernels/cpu/linalg_solve_matrices.h"
#include "runtime/linalg_solve_errors.h"

namespace ember::cpu {

namespace {

// L from A's lower triangle, column by column (Cholesky-Crout), as LAPACK's potf2: the first
// diagonal that is not positive (or NaN) stops it, and its 1-based column is returned.
template <typename T>
int64_t cholesky_into(const RowMatrix<T>& a, Eigen::Ref<RowMatrix<T>> l) {
  const Eigen::Index n = a.rows();
  l.setZero();
  for (Eigen::Index j = 0; j < n; ++j) {
    const T diagonal = a(j, j) - l.row(j).head(j).squaredNorm();
    if (!(diagonal > T(0))) return j + 1;
    l(j, j) = std::sqrt(diagonal);
    const Eigen::Index rest = n - j - 1;
    l.col(j).tail(rest) = (a.col(j).tail(rest) - l.bottomLeftCorner(rest, j) * l.row(j).head(j).transpose()) / l(j, j);
  }
  return 0;
}

template <typename T, unsigned Mode>
void solve_with(const RowMatrix<T>& a, Eigen::Ref<RowMatrix<T>> x) {
  a.template triangularView<Mode>().solveInPlace(x);
}

}  // namespace

void cholesky_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  auto run = [&]<typename T>() {
    for (int64_t m = 0; m < matrix_count(a); ++m) {
      const int64_t failed = cholesky_into<T>(load_matrix<T>(a, m), output_matrix<T>(outputs[0], m));
      if (failed != 0) fail_not_positive_definite(a.dim() > 2, m, failed);
    }
  };
  if (a.dtype() == kFloat64) {
    run.template operator()<double>();
  } else {
    run.template operator()<float>();
  }
}

void solve_triangular_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  const bool upper = call.attrs.get<bool>("upper");
  const bool unit = call.attrs.get<bool>("unitriangular");
  auto run = [&]<typename T>() {
    for (int64_t m = 0; m < matrix_count(b); ++m) {
      const RowMatrix<T> triangle = load_matrix<T>(a, m);
      auto x = output_matrix<T>(outputs[0], m);
      x = load_matrix<T>(b, m);
      if (x.size() == 0) continue;
      // No singularity check: a zero diagonal gives inf and nan, as torch's trsm does.
      if (upper) {
        unit ? solve_with<T, Eigen::UnitUpper>(triangle, x) : solve_with<T, Eigen::Upper>(triangle, x);
      } else {
        unit ? solve_with<T, Eigen::UnitLower>(triangle, x) : solve_with<T, Eigen::Lower>(triangle, x);
      }
    }
  };
  if (a.dtype() == kFloat64) {
    run.template operator()<double>();
  } else {
    run.template operator()<float>();
  }
}

}  // namespace ember::cpu
