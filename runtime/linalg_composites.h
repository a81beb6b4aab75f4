// torch.linalg's composites beside the solve family: vecdot, matrix_exp, tensorinv, tensorsolve and the
// _ex forms (inv_ex, cholesky_ex, solve_ex) that report failures in an info tensor instead of throwing.
// All are composites of existing ops (runtime/linalg_composites.cpp): autograd, CUDA and capture come
// from mul, sum, matmul, reshape, linalg::solve and linalg::cholesky.
#pragma once

#include <optional>
#include <tuple>

#include "runtime/tensor.h"

namespace ember::linalg {

// vecdot: sum(x * y) over dim, x and y broadcast (real dtypes: torch's conj(x) is x here).
Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim = -1, Where where = Where::current());

// matrix_exp: e^A of a batch of square matrices [*, n, n], float32 or float64, by scaling and
// squaring: A / 2^s with s chosen so that the largest 1-norm in the batch is <= 1, then its Taylor
// series to degree 18 (the remainder 1/19! is below float64's epsilon), squared s times. s is read on
// the host (a device sync), so under ember::compile it is fixed at capture. Differentiable through
// its matmuls.
Tensor matrix_exp(const Tensor& A, Where where = Where::current());

// tensorinv: the inverse of `a` as a tensor operator: a's shape is out + in with out = a.shape[:ind],
// prod(out) == prod(in); the result has shape in + out, so that tensordot(result, a, ind) is the
// identity. ind must be positive.
Tensor tensorinv(const Tensor& a, int64_t ind = 2, Where where = Where::current());
// tensorsolve: x with tensordot(a, x, x.dim()) == b. `dims` (if given) are moved to the end of a
// first; x has shape a.shape[b.dim():], and prod of it must equal b.numel().
Tensor tensorsolve(const Tensor& a, const Tensor& b, const std::optional<Dims>& dims = std::nullopt,
                   Where where = Where::current());

// The _ex forms: (result, info), info int32 of the batch shape, 0 where the matrix was factored and
// else LAPACK's 1-based index (the zero pivot of U for inv_ex / solve_ex, the order of the leading
// minor that is not positive-definite for cholesky_ex). The result of a failed matrix is NaN.
// check_errors = true throws the usual linalg error instead, as torch. cholesky_ex finds a failure
// from the signs of the leading minors' determinants: a matrix so close to singular that Cholesky's
// own rounding fails where the determinants are positive still throws.
std::tuple<Tensor, Tensor> inv_ex(const Tensor& A, bool check_errors = false, Where where = Where::current());
std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper = false, bool check_errors = false,
                                       Where where = Where::current());
std::tuple<Tensor, Tensor> solve_ex(const Tensor& A, const Tensor& B, bool left = true, bool check_errors = false,
                                    Where where = Where::current());

}  // namespace ember::linalg
