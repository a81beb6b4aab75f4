// torch.linalg's spectral decompositions and what builds on them, in namespace ember::linalg:
// qr, eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, matrix_norm, cond and lstsq.
// runtime/linalg.h (solve, inv, det, cholesky) includes this one, so users include that.
//
// Every function takes a batch [*, m, n] of float32 or float64 matrices and works per matrix.
// qr, eigh and svd are registry ops (linalg_qr, linalg_eigh, linalg_svd: Eigen on the CPU,
// cuSOLVER on CUDA); the rest are composites of them, so they differentiate through them.
//
// Signs and order. Like PyTorch, ember fixes no signs: a column of Q (with the matching row of R),
// an eigenvector, or a pair (column of U, row of Vh) may come out negated, and the CPU and CUDA
// results may differ by such signs. What is fixed: eigenvalues ascend, singular values descend,
// R is upper triangular. Code that needs unique results uses sign-free quantities (Q R, U S Vh,
// V V^T, |.|), as the tests do.
//
// Gradients (PyTorch's formulas):
//   qr:   m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q (copyltu: the symmetric
//         matrix with M's lower triangle); m < n splits A = [X | Y] and reduces to the square case.
//         Refused, as PyTorch does, for mode "r" and for mode "complete" with m > n.
//   eigh: gA = V (diag(gL) + (V^T gV) / E) V^T with E_ij = L_j - L_i off the diagonal (the
//         diagonal of the quotient is 0). Valid along symmetric perturbations, as PyTorch's.
//   svd:  PyTorch's svd_backward (distinct nonzero singular values); with full_matrices the
//         columns of U / rows of Vh past min(m, n) get no gradient, as PyTorch ignores them.
// They hold for distinct eigenvalues / singular values; repeated ones give inf or NaN gradients
// of the vectors, as in PyTorch.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>

#include "runtime/error.h"
#include "runtime/tensor.h"

namespace ember::linalg {

// A = Q R. mode "reduced": Q [*, m, k], R [*, k, n] (k = min(m, n)); "complete": Q [*, m, m],
// R [*, m, n]; "r": R [*, k, n] and an empty Q (shape [0]), as PyTorch.
std::tuple<Tensor, Tensor> qr(const Tensor& A, std::string_view mode = "reduced", Where where = Where::current());

// A symmetric A = V diag(L) V^T from one triangle: UPLO "L" reads the lower, "U" the upper.
// Returns (eigenvalues [*, n] ascending, eigenvectors [*, n, n] as columns).
std::tuple<Tensor, Tensor> eigh(const Tensor& A, std::string_view UPLO = "L", Where where = Where::current());
Tensor eigvalsh(const Tensor& A, std::string_view UPLO = "L", Where where = Where::current());

// A = U diag(S) Vh with S [*, k] descending. full_matrices: U [*, m, m], Vh [*, n, n]; else
// U [*, m, k], Vh [*, k, n].
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices = true, Where where = Where::current());
Tensor svdvals(const Tensor& A, Where where = Where::current());

// The Moore-Penrose pseudo-inverse [*, n, m]: singular values at or below
// max(atol, rtol * largest) count as zero. Neither given: atol 0, rtol eps(dtype) * max(m, n);
// only atol given (> 0): rtol 0, as PyTorch. hermitian: A is symmetric (eigh of its lower triangle).
Tensor pinv(const Tensor& A, std::optional<double> atol = std::nullopt, std::optional<double> rtol = std::nullopt,
            bool hermitian = false, Where where = Where::current());
// The older form: rtol = rcond, atol = 0 (libtorch's pinv(input, rcond, hermitian)).
Tensor pinv(const Tensor& A, double rcond, bool hermitian = false, Where where = Where::current());

// The number of singular values above max(atol, rtol * largest), int64 [*]; tolerances as pinv.
Tensor matrix_rank(const Tensor& A, std::optional<double> atol = std::nullopt,
                   std::optional<double> rtol = std::nullopt, bool hermitian = false, Where where = Where::current());
// The older form: atol = tol, rtol = 0.
Tensor matrix_rank(const Tensor& A, double tol, bool hermitian = false, Where where = Where::current());

// Matrix norms over the two dims `dim` (default the last two):
//   "fro": sqrt(sum a_ij^2); "nuc": sum of singular values; 2 / -2: largest / smallest singular
//   value; 1 / -1: max / min column sum of |a_ij|; inf / -inf: max / min row sum of |a_ij|.
Tensor matrix_norm(const Tensor& A, std::string_view ord = "fro", const Dims& dim = {-2, -1}, bool keepdim = false,
                   Where where = Where::current());
Tensor matrix_norm(const Tensor& A, double ord, const Dims& dim = {-2, -1}, bool keepdim = false,
                   Where where = Where::current());

// The condition number: p unset or 2: S_max / S_min (any m, n); -2: S_min / S_max; "fro", "nuc",
// 1, -1, inf, -inf: norm(A, p) * norm(A^-1, p) for square invertible A (inf when singular).
Tensor cond(const Tensor& A, std::optional<double> p = std::nullopt, Where where = Where::current());
Tensor cond(const Tensor& A, std::string_view p, Where where = Where::current());

// Least squares min ||A X - B|| through the SVD (LAPACK's gelsd driver): B [*, m, k] or [*, m].
// Returns (solution [*, n, k], residuals, rank, singular_values) as PyTorch's fields: residuals
// are the squared residual norms per column [*, k] when m > n and every matrix has full rank,
// else empty; rank [*] int64 and singular_values [*, min(m, n)] as gelsd gives them. rcond unset:
// eps(dtype) * max(m, n); singular values at or below rcond * largest count as zero.
std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& A, const Tensor& B,
                                                 std::optional<double> rcond = std::nullopt,
                                                 Where where = Where::current());

}  // namespace ember::linalg
