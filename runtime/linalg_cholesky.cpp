// linalg.cholesky, solve_triangular, cholesky_solve and cholesky_inverse (runtime/linalg.h) over
// the linalg_cholesky and linalg_solve_triangular ops. upper = true is the transpose of the lower
// factor; left = false solves the transposed system (X A = B is A^T X^T = B^T, A^T in the other
// triangle). cholesky_solve is two triangular solves, L^-T (L^-1 B), so its gradient is the one of
// what it computes: the factor's gradient stays on the factor's triangle.
#include "runtime/dispatch.h"
#include "runtime/functional_shape_more.h"
#include "runtime/linalg.h"
#include "runtime/linalg_solve_checks.h"

namespace ember::linalg {

using linalg_detail::broadcast_batches;
using linalg_detail::check_same_dtype_device;
using linalg_detail::check_square_floating;
using linalg_detail::matrix_transpose;

namespace {

// X with T X = B for a triangular T, T and B of one batch after broadcasting.
Tensor triangular_left(const char* function, const Tensor& t, const Tensor& b, bool upper, bool unitriangular) {
  static const OpDef& op = lookup_op("linalg_solve_triangular");
  const auto [t_batched, b_batched] = broadcast_batches(function, t, b);
  return dispatch_one(op, {t_batched, b_batched}, {{"upper", upper}, {"unitriangular", unitriangular}});
}

void check_rhs(const char* function, const Tensor& a, const Tensor& b, bool left) {
  check_same_dtype_device(function, a, b);
  check(b.dim() >= 2 && (left ? b.size(-2) : b.size(-1)) == a.size(-1),
        "{}: Incompatible shapes of A and B for the equation {} ({}x{} and {})", function, left ? "AX = B" : "XA = B",
        a.size(-2), a.size(-1), b.sizes());
}

}  // namespace

Tensor cholesky(const Tensor& A, bool upper, Where where) {
  CallSiteScope site(where);
  check_square_floating("linalg.cholesky", A);
  static const OpDef& op = lookup_op("linalg_cholesky");
  const Tensor lower = dispatch_one(op, {A});
  return upper ? matrix_transpose(lower) : lower;
}

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular, Where where) {
  CallSiteScope site(where);
  check_square_floating("linalg.solve_triangular", A);
  check_rhs("linalg.solve_triangular", A, B, left);
  if (left) return triangular_left("linalg.solve_triangular", A, B, upper, unitriangular);
  return matrix_transpose(
      triangular_left("linalg.solve_triangular", matrix_transpose(A), matrix_transpose(B), !upper, unitriangular));
}

}  // namespace ember::linalg

namespace ember {

Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper, Where where) {
  CallSiteScope site(where);
  linalg_detail::check_square_floating("cholesky_solve", L, "L");
  linalg::check_rhs("cholesky_solve", L, B, true);
  // A = L L^T: X = L^-T (L^-1 B). A = U^T U: X = U^-1 (U^-T B).
  const Tensor lower = upper ? linalg_detail::matrix_transpose(L) : L;
  const Tensor half = linalg::triangular_left("cholesky_solve", lower, B, false, false);
  return linalg::triangular_left("cholesky_solve", linalg_detail::matrix_transpose(lower), half, true, false);
}

Tensor cholesky_inverse(const Tensor& L, bool upper, Where where) {
  CallSiteScope site(where);
  linalg_detail::check_square_floating("cholesky_inverse", L, "L");
  const Tensor identity = eye(L.size(-1), {.dtype = L.dtype(), .device = L.device()});
  return cholesky_solve(expand(identity, L.sizes()), L, upper);
}

}  // namespace ember
