// linalg::vecdot, matrix_exp, tensorinv, tensorsolve and the _ex forms (runtime/linalg_composites.h) from
// mul, sum, matmul, reshape, lu_factor, slogdet, solve and cholesky.
#include "runtime/linalg_composites.h"

#include <cmath>
#include <limits>

#include "runtime/functional.h"
#include "runtime/linalg.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::linalg {

namespace {

using ops::scalar_like;

// Taylor degree of matrix_exp: with ||X||_1 <= 1 the first term left out is at most 1/19! < 2^-55.
constexpr int kTaylorDegree = 18;

void check_square_floating(const Tensor& A, const char* function) {
  check(A.dim() >= 2 && A.size(-1) == A.size(-2),
        "{}: A must be batches of square matrices, but they are {} by {} "
        "(shape {})",
        function, A.dim() >= 2 ? A.size(-2) : 0, A.dim() >= 1 ? A.size(-1) : 0, A.sizes());
  check(A.dtype() == kFloat32 || A.dtype() == kFloat64, "{}: expected a float32 or float64 A, got {}", function,
        A.dtype());
}

// sizes[begin:end] (Dims has no iterator-pair constructor).
Dims dims_slice(const Dims& sizes, int begin, int end) {
  Dims result;
  for (int i = begin; i < end; ++i) result.push_back(sizes[i]);
  return result;
}

Dims batch_shape(const Tensor& A) { return dims_slice(A.sizes(), 0, A.sizes().size() - 2); }

int64_t product(const Dims& sizes, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= sizes[i];
  return result;
}

Tensor identity_like(const Tensor& A) {
  return eye(A.size(-1), TensorOptions{.dtype = A.dtype(), .device = A.device()});
}

// LAPACK's info from flags [*, n] (true where the matrix failed at that step): the 1-based index of
// the first true flag, 0 where none is, as int32 of the batch shape.
Tensor first_failure(const Tensor& failed, const Dims& batch) {
  if (failed.size(-1) == 0) return zeros(batch, TensorOptions{.dtype = kInt32, .device = failed.device()});
  const Tensor flags = to_dtype(failed, kInt32);
  const Tensor index = add(argmax(flags, -1), 1.0);
  return to_dtype(mul(index, to_dtype(amax(flags, {-1}), kInt64)), kInt32);
}

// The zero pivots of A's LU factorization as inv_ex's info.
Tensor singular_info(const Tensor& A) {
  const auto [LU, pivots] = lu_factor(A.detach());
  const Tensor diagonal = LU.diagonal(0, -2, -1);
  return first_failure(eq(diagonal, scalar_like(0.0, diagonal)), batch_shape(A));
}

// A where its info is 0, else the identity, so the factorization of the failed ones cannot throw.
Tensor replace_failed(const Tensor& A, const Tensor& ok_matrix) { return where(ok_matrix, A, identity_like(A)); }

Tensor nan_where_failed(const Tensor& result, const Tensor& ok) {
  return where(ok, result, scalar_like(std::numeric_limits<double>::quiet_NaN(), result));
}

Tensor ok_of(const Tensor& info) { return unsqueeze(unsqueeze(eq(info, scalar_like(0.0, info)), -1), -1); }

}  // namespace

Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim, Where where) {
  CallSiteScope site(where);
  return sum(mul(x, y), {dim});
}

Tensor matrix_exp(const Tensor& A, Where where) {
  CallSiteScope site(where);
  check_square_floating(A, "linalg.matrix_exp");
  if (A.numel() == 0) return mul(A, 1.0);
  const double norm_1 = amax(sum(abs(A.detach()), {-2})).item();
  const int squarings = std::isfinite(norm_1) && norm_1 > 1.0 ? static_cast<int>(std::ceil(std::log2(norm_1))) : 0;
  const Tensor X = squarings == 0 ? A : mul(A, std::ldexp(1.0, -squarings));  // a power of 2: exact
  const Tensor I = identity_like(A);
  // Horner form of sum_k X^k / k!: P = I + X P / k, from k = degree down to 1.
  Tensor P = I;
  for (int k = kTaylorDegree; k >= 1; --k) P = add(I, div(matmul(X, P), static_cast<double>(k)));
  for (int i = 0; i < squarings; ++i) P = matmul(P, P);
  return P;
}

Tensor tensorinv(const Tensor& a, int64_t ind, Where where) {
  CallSiteScope site(where);
  check(ind > 0, "linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {}", ind);
  const Dims& sizes = a.sizes();
  const size_t split = std::min<size_t>(static_cast<size_t>(ind), sizes.size());
  const int64_t rows = product(sizes, 0, split), columns = product(sizes, split, sizes.size());
  check(rows == columns,
        "linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
        "prod(self.shape[:ind]), but got {} != {} (shape {}, ind {})",
        columns, rows, sizes, ind);
  Dims result_shape = dims_slice(sizes, static_cast<int>(split), sizes.size());
  for (size_t i = 0; i < split; ++i) result_shape.push_back(sizes[static_cast<int>(i)]);
  return reshape(inv(reshape(a, {rows, columns})), result_shape);
}

Tensor tensorsolve(const Tensor& a, const Tensor& b, const std::optional<Dims>& dims, Where where) {
  CallSiteScope site(where);
  Tensor moved = a;
  if (dims && !dims->empty()) {
    Dims destination;
    const int64_t count = static_cast<int64_t>(dims->size());
    for (int64_t i = 0; i < count; ++i) destination.push_back(a.dim() - count + i);
    moved = a.movedim(*dims, destination);
  }
  const Dims& sizes = moved.sizes();
  check(moved.dim() >= b.dim(), "linalg.tensorsolve: a has {} dims, fewer than b's {} (shapes {} and {})", moved.dim(),
        b.dim(), sizes, b.sizes());
  const Dims result_shape = dims_slice(sizes, b.dim(), sizes.size());
  const int64_t unknowns = product(sizes, static_cast<size_t>(b.dim()), sizes.size());
  check(unknowns == b.numel() && product(sizes, 0, static_cast<size_t>(b.dim())) == b.numel(),
        "linalg.tensorsolve: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
        "prod(self.shape[:other.ndim]), but got {} != {} (a {}, b {})",
        unknowns, product(sizes, 0, static_cast<size_t>(b.dim())), sizes, b.sizes());
  return reshape(solve(reshape(moved, {b.numel(), unknowns}), reshape(b, {b.numel()})), result_shape);
}

std::tuple<Tensor, Tensor> inv_ex(const Tensor& A, bool check_errors, Where where) {
  CallSiteScope site(where);
  check_square_floating(A, "linalg.inv_ex");
  if (check_errors) return {inv(A), zeros(batch_shape(A), TensorOptions{.dtype = kInt32, .device = A.device()})};
  const Tensor info = singular_info(A);
  const Tensor ok = ok_of(info);
  return {nan_where_failed(inv(replace_failed(A, ok)), ok), info};
}

std::tuple<Tensor, Tensor> solve_ex(const Tensor& A, const Tensor& B, bool left, bool check_errors, Where where) {
  CallSiteScope site(where);
  check_square_floating(A, "linalg.solve_ex");
  if (check_errors) {
    return {solve(A, B, left), zeros(batch_shape(A), TensorOptions{.dtype = kInt32, .device = A.device()})};
  }
  const Tensor info = singular_info(A);
  const Tensor ok = ok_of(info);
  const Tensor X = solve(replace_failed(A, ok), B, left);
  // torch's rule: B is a vector when 1-D or of shape A.shape[:-1]; X then has one dim less.
  const Dims vector_shape = dims_slice(A.sizes(), 0, A.sizes().size() - 1);
  const bool vector = B.dim() == 1 || B.sizes() == vector_shape;
  return {nan_where_failed(X, vector ? squeeze(ok, -1) : ok), info};
}

std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper, bool check_errors, Where where) {
  CallSiteScope site(where);
  check_square_floating(A, "linalg.cholesky_ex");
  if (check_errors) {
    return {cholesky(A, upper), zeros(batch_shape(A), TensorOptions{.dtype = kInt32, .device = A.device()})};
  }
  // Most calls succeed: one factorization, O(n^3). Only when some matrix fails are the leading
  // minors examined (n determinants, O(n^4)) to find where each one stops.
  try {
    Tensor factor = cholesky(A, upper);
    return {factor, zeros(batch_shape(A), TensorOptions{.dtype = kInt32, .device = A.device()})};
  } catch (const Error&) {
  }
  // The symmetric matrix cholesky reads (A's lower triangle), and the sign of each leading minor's
  // determinant: the first that is not positive is where Cholesky stops.
  const Tensor lower = A.detach().tril();
  const Tensor symmetric = add(lower, lower.tril(-1).transpose(-2, -1));
  std::vector<Tensor> failed;
  for (int64_t k = 1; k <= A.size(-1); ++k) {
    const Tensor minor = narrow(narrow(symmetric, -2, 0, k), -1, 0, k);
    const auto [sign, logabsdet] = slogdet(minor);
    failed.push_back(logical_or(logical_not(gt(sign, scalar_like(0.0, sign))), isnan(logabsdet)));
  }
  const Tensor info = failed.empty() ? zeros(batch_shape(A), TensorOptions{.dtype = kInt32, .device = A.device()})
                                     : first_failure(stack(failed, -1), batch_shape(A));
  const Tensor ok = ok_of(info);
  return {nan_where_failed(cholesky(replace_failed(A, ok), upper), ok), info};
}

}  // namespace ember::linalg
