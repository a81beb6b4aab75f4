// LU with partial pivoting and what it serves: lu_factor, lu_solve, solve and slogdet on the CPU.
// The factorization is LAPACK getf2's (the largest magnitude of the column below the diagonal is
// the pivot, the first of equal ones), so pivots match torch's, and a zero pivot is reported as
// LAPACK's info: the 1-based index of the first zero diagonal element of U.
// GCC 12's avx512fintrin.h initializes a variable with itself on purpose, and -Wmaybe-uninitialized
// reports it wherever Eigen's AVX-512 code is inlined (kernels/cpu/gemm_library.cpp says more).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cmath>
#include <vector>

#include "kernels/cpu/linalg_solve_kernels.h"
#include "kernels/cpu/linalg_solve_matrices.h"
#include "runtime/linalg_solve_errors.h"

namespace ember::cpu {

namespace {

// Factors `lu` in place into unit-lower L (below the diagonal) and U; pivots[k] is the 1-based
// row swapped with row k at step k. Returns the 1-based index of U's first zero diagonal
// element, or 0.
template <typename T>
int64_t factor_in_place(Eigen::Ref<RowMatrix<T>> lu, int32_t* pivots) {
  const Eigen::Index n = lu.rows();
  int64_t first_zero = 0;
  for (Eigen::Index k = 0; k < n; ++k) {
    Eigen::Index pivot = 0;
    lu.col(k).tail(n - k).cwiseAbs().maxCoeff(&pivot);
    pivot += k;
    pivots[k] = static_cast<int32_t>(pivot + 1);
    if (pivot != k) lu.row(k).swap(lu.row(pivot));
    const Eigen::Index rest = n - k - 1;
    if (lu(k, k) == T(0)) {
      // The column below is zero too (the pivot was the largest): nothing to eliminate.
      if (first_zero == 0) first_zero = k + 1;
      continue;
    }
    lu.col(k).tail(rest) /= lu(k, k);
    lu.bottomRightCorner(rest, rest).noalias() -= lu.col(k).tail(rest) * lu.row(k).tail(rest);
  }
  return first_zero;
}

// Solves A X = B (or A^T X = B) in place in `b` from A's factors: A = P L U, P the swaps.
template <typename T>
void solve_in_place(const RowMatrix<T>& lu, const int32_t* pivots, Eigen::Ref<RowMatrix<T>> b, bool adjoint) {
  const Eigen::Index n = lu.rows();
  if (!adjoint) {
    for (Eigen::Index k = 0; k < n; ++k)
      if (pivots[k] - 1 != k) b.row(k).swap(b.row(pivots[k] - 1));
    lu.template triangularView<Eigen::UnitLower>().solveInPlace(b);
    lu.template triangularView<Eigen::Upper>().solveInPlace(b);
    return;
  }
  // A^T = U^T L^T P^T: solve with U^T, then L^T, then undo the swaps in reverse order.
  lu.transpose().template triangularView<Eigen::Lower>().solveInPlace(b);
  lu.transpose().template triangularView<Eigen::UnitUpper>().solveInPlace(b);
  for (Eigen::Index k = n - 1; k >= 0; --k)
    if (pivots[k] - 1 != k) b.row(k).swap(b.row(pivots[k] - 1));
}

// Matrix m's pivots (a row of the int32 [*, n] tensor, any strides).
std::vector<int32_t> pivots_of(const Tensor& pivots, int64_t m) {
  const int64_t n = pivots.size(-1);
  int64_t offset = 0;
  for (int d = pivots.dim() - 2; d >= 0; --d) {
    offset += (m % pivots.sizes()[d]) * pivots.strides()[d];
    m /= pivots.sizes()[d];
  }
  std::vector<int32_t> row_swaps(static_cast<size_t>(n));
  const int32_t* start = pivots.data_ptr<int32_t>() + offset;
  for (int64_t k = 0; k < n; ++k) {
    row_swaps[k] = start[k * pivots.strides()[pivots.dim() - 1]];
    check(row_swaps[k] >= k + 1 && row_swaps[k] <= n,
          "linalg.lu_solve: pivots[{}] is {}, expected a 1-based row in [{}, {}] (pivots of shape {})", k, row_swaps[k],
          k + 1, n, pivots.sizes());
  }
  return row_swaps;
}

// Calls body.template operator()<T>() with T the floating dtype of `dtype` (float32 or float64,
// which the shape rules have checked).
template <typename Body>
void for_floating(DType dtype, Body&& body) {
  if (dtype == kFloat64) {
    body.template operator()<double>();
  } else {
    body.template operator()<float>();
  }
}

}  // namespace

void lu_factor_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  for_floating(a.dtype(), [&]<typename T>() {
    const int64_t n = a.size(-1);
    for (int64_t m = 0; m < matrix_count(a); ++m) {
      auto lu = output_matrix<T>(outputs[0], m);
      lu = load_matrix<T>(a, m);
      factor_in_place<T>(lu, n == 0 ? nullptr : outputs[1].data_ptr<int32_t>() + m * n);
    }
  });
}

void lu_solve_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& packed = call.input(0);
  const Tensor& b = call.input(2);
  const bool adjoint = call.attrs.get<bool>("adjoint");
  for_floating(b.dtype(), [&]<typename T>() {
    for (int64_t m = 0; m < matrix_count(b); ++m) {
      auto x = output_matrix<T>(outputs[0], m);
      x = load_matrix<T>(b, m);
      if (packed.size(-1) == 0) continue;
      solve_in_place<T>(load_matrix<T>(packed, m), pivots_of(call.input(1), m).data(), x, adjoint);
    }
  });
}

void solve_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  const bool inverse = call.attrs.get<bool>("inverse");
  for_floating(a.dtype(), [&]<typename T>() {
    const int64_t n = a.size(-1);
    std::vector<int32_t> pivots(static_cast<size_t>(n));
    for (int64_t m = 0; m < matrix_count(a); ++m) {
      RowMatrix<T> lu = load_matrix<T>(a, m);
      const int64_t zero = factor_in_place<T>(lu, pivots.data());
      if (zero != 0) fail_singular(inverse, a.dim() > 2, m, zero);
      auto x = output_matrix<T>(outputs[0], m);
      x = load_matrix<T>(b, m);
      solve_in_place<T>(lu, pivots.data(), x, false);
    }
  });
}

void slogdet_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  for_floating(a.dtype(), [&]<typename T>() {
    const int64_t n = a.size(-1);
    std::vector<int32_t> pivots(static_cast<size_t>(n));
    T* sign = outputs[0].data_ptr<T>();
    T* logabsdet = outputs[1].data_ptr<T>();
    for (int64_t m = 0; m < matrix_count(a); ++m) {
      RowMatrix<T> lu = load_matrix<T>(a, m);
      factor_in_place<T>(lu, pivots.data());
      // Summed in the dtype, as torch's log(|diag U|).sum(); a zero pivot gives sign 0, -inf.
      T sign_product(1), log_sum(0);
      for (int64_t k = 0; k < n; ++k) {
        const T pivot = lu(k, k);
        if (pivots[k] - 1 != k) sign_product = -sign_product;
        sign_product *= pivot > T(0) ? T(1) : (pivot < T(0) ? T(-1) : T(0));
        log_sum += std::log(std::abs(pivot));
      }
      sign[m] = sign_product;
      logabsdet[m] = log_sum;
    }
  });
}

}  // namespace ember::cpu
