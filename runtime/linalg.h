// torch.linalg's solve family: LU (solve, inv, det, slogdet, lu_factor, lu_solve) and Cholesky
// (cholesky, solve_triangular, cholesky_solve, cholesky_inverse), with libtorch's names, defaults,
// shapes and errors. Every function takes float32 or float64 batches of matrices [*, n, n]; the
// batch dims of A and B broadcast against each other as in torch.
//
// Six registry ops do the numerics (runtime/ops/linalg_solve_ops.cpp, linalg_cholesky_ops.cpp):
// linalg_lu_factor, linalg_lu_solve, linalg_solve, linalg_slogdet, linalg_cholesky and
// linalg_solve_triangular; the rest are composites of them (runtime/linalg_solve.cpp,
// linalg_det.cpp, linalg_cholesky.cpp). Backward rules (torch's):
//   X = A^-1 B:        gB = A^-T gX,  gA = -gB X^T
//   logabsdet(A):      gA = g A^-T
//   L = cholesky(A):   gA = L^-T Phi(L^T gL) L^-1 symmetrized, Phi = lower triangle, halved diagonal
//   X = T^-1 B (T triangular): gB = T^-T gX, gA = -gB X^T restricted to T's triangle (its strict
//                      triangle when unitriangular)
#pragma once

#include <tuple>

#include "runtime/tensor.h"

namespace ember::linalg {

// X with A X = B (left) or X A = B (left = false). B is a vector when it is 1-D or has shape
// A.shape[:-1] (torch's rule), else a batch of matrices [*, n, k]. Singular A throws, naming the
// batch element and the zero diagonal element of U (LAPACK's 1-based index), as torch.
Tensor solve(const Tensor& A, const Tensor& B, bool left = true, Where where = Where::current());
Tensor inv(const Tensor& A, Where where = Where::current());
// det = sign * exp(logabsdet). At an exactly singular A, det is 0 but its gradient is not
// available (torch takes an SVD path there): the backward throws the singular-matrix error.
Tensor det(const Tensor& A, Where where = Where::current());
// (sign, logabsdet): sign is -1, 0 or 1; logabsdet is -inf for a singular matrix.
std::tuple<Tensor, Tensor> slogdet(const Tensor& A, Where where = Where::current());
// Lower L with L L^T = A (upper = false) or U = L^T with U^T U = A. Reads A's lower triangle
// only; the gradient is symmetric, as torch's. A matrix that is not positive-definite throws
// torch's message naming the order of the leading minor that is not.
Tensor cholesky(const Tensor& A, bool upper = false, Where where = Where::current());
// X with A X = B (left) or X A = B, A triangular (upper or lower; its other triangle is not read),
// with an implicit unit diagonal when unitriangular. B must be a batch of matrices (no vectors).
Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true, bool unitriangular = false,
                        Where where = Where::current());
// (LU, pivots): L (unit diagonal, below) and U packed in one matrix, pivots int32 1-based as
// LAPACK's getrf: row i was swapped with row pivots[i] - 1 at step i. Square matrices only.
std::tuple<Tensor, Tensor> lu_factor(const Tensor& A, Where where = Where::current());
// X with A X = B (or A^T X = B when adjoint, X A = B when left = false) from lu_factor's result.
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true, bool adjoint = false,
                Where where = Where::current());

}  // namespace ember::linalg

namespace ember {

// torch.inverse, torch.det: aliases of linalg.inv and linalg.det.
Tensor inverse(const Tensor& A, Where where = Where::current());
Tensor det(const Tensor& A, Where where = Where::current());
// log(det(A)): nan where det is negative, -inf where A is singular (torch.logdet).
Tensor logdet(const Tensor& A, Where where = Where::current());
// X with A X = B where A = L L^T (upper = false) or U^T U, from the factor L or U (torch's
// argument order: B first). The gradient w.r.t. the factor is the one of the computation, restricted
// to its triangle (torch's formula fills the other triangle too).
Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper = false, Where where = Where::current());
// A^-1 from A's Cholesky factor.
Tensor cholesky_inverse(const Tensor& L, bool upper = false, Where where = Where::current());

}  // namespace ember

// The decompositions (qr, eigh, svd) and what builds on them.
#include "runtime/linalg_spectral.h"
// vecdot, matrix_exp, tensorinv, tensorsolve and the _ex forms, composites of the above.
#include "runtime/linalg_composites.h"
