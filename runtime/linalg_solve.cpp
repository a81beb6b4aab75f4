// linalg.solve, inv, lu_factor and lu_solve (runtime/linalg.h) over the linalg_solve,
// linalg_lu_factor and linalg_lu_solve ops: the user's checks, torch's vector right-hand sides,
// batch broadcasting, and left = false as the transposed system (X A = B is A^T X^T = B^T).
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

// torch's linalg_solve_is_vector_rhs: B is a vector when 1-D or shaped A.shape[:-1].
bool is_vector_rhs(const Tensor& a, const Tensor& b) {
  if (b.dim() == 1) return true;
  if (b.dim() != a.dim() - 1) return false;
  for (int d = 0; d < b.dim(); ++d)
    if (b.sizes()[d] != a.sizes()[d]) return false;
  return true;
}

// X with A X = B; A and B of one batch after broadcasting.
Tensor solve_left(const Tensor& a, const Tensor& b, bool inverse) {
  static const OpDef& op = lookup_op("linalg_solve");
  const auto [a_batched, b_batched] = broadcast_batches(inverse ? "linalg.inv" : "linalg.solve", a, b);
  return dispatch_one(op, {a_batched, b_batched}, {{"inverse", inverse}});
}

void check_pivots(const Tensor& lu, const Tensor& pivots) {
  check(pivots.dtype() == kInt32, "linalg.lu_solve: Expected pivots to be int32 (as lu_factor returns), got {}",
        pivots.dtype());
  check(pivots.dim() == lu.dim() - 1 && pivots.size(-1) == lu.size(-1),
        "linalg.lu_solve: Expected pivots of shape [*, {}] beside LU {}, got {}", lu.size(-1), lu.sizes(),
        pivots.sizes());
  check(pivots.device() == lu.device(), "linalg.lu_solve: Expected LU and pivots on one device, got {} and {}",
        lu.device(), pivots.device());
}

}  // namespace

Tensor solve(const Tensor& A, const Tensor& B, bool left, Where where) {
  CallSiteScope site(where);
  check_square_floating("linalg.solve", A);
  check_same_dtype_device("linalg.solve", A, B);
  const bool vector = is_vector_rhs(A, B);
  const Tensor b = vector ? unsqueeze(B, left ? -1 : -2) : B;
  check(b.dim() >= 2 && (left ? b.size(-2) : b.size(-1)) == A.size(-1),
        "linalg.solve: Incompatible shapes of A and B for the equation {} ({}x{} and {})", left ? "AX = B" : "XA = B",
        A.size(-2), A.size(-1), B.sizes());
  const Tensor x =
      left ? solve_left(A, b, false) : matrix_transpose(solve_left(matrix_transpose(A), matrix_transpose(b), false));
  return vector ? squeeze(x, left ? -1 : -2) : x;
}

Tensor inv(const Tensor& A, Where where) {
  CallSiteScope site(where);
  check_square_floating("linalg.inv", A);
  const Tensor identity = eye(A.size(-1), {.dtype = A.dtype(), .device = A.device()});
  return solve_left(A, expand(identity, A.sizes()), true);
}

std::tuple<Tensor, Tensor> lu_factor(const Tensor& A, Where where) {
  CallSiteScope site(where);
  check_square_floating("linalg.lu_factor", A);
  static const OpDef& op = lookup_op("linalg_lu_factor");
  const Tensor inputs[] = {A};
  const TensorList outputs = dispatch({op, inputs, Attrs{}});
  return {outputs[0], outputs[1]};
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint, Where where) {
  CallSiteScope site(where);
  check_square_floating("linalg.lu_solve", LU, "LU");
  check_same_dtype_device("linalg.lu_solve", LU, B);
  check_pivots(LU, pivots);
  check(B.dim() >= 2 && (left ? B.size(-2) : B.size(-1)) == LU.size(-1),
        "linalg.lu_solve: Incompatible shapes of A and B for the equation {} ({}x{} and {})",
        left ? "AX = B" : "XA = B", LU.size(-2), LU.size(-1), B.sizes());
  static const OpDef& op = lookup_op("linalg_lu_solve");
  const Tensor b = left ? B : matrix_transpose(B);
  // X A = B is A^T X^T = B^T: the other of adjoint on the transposed right-hand side.
  const bool solve_adjoint = left ? adjoint : !adjoint;
  const auto [lu_batched, b_batched] = broadcast_batches("linalg.lu_solve", LU, b);
  const Tensor pivots_batched = expand(pivots, linalg_detail::batch_of(lu_batched, 1));
  const Tensor x = dispatch_one(op, {lu_batched, pivots_batched, b_batched}, {{"adjoint", solve_adjoint}});
  return left ? x : matrix_transpose(x);
}

}  // namespace ember::linalg

namespace ember {

Tensor inverse(const Tensor& A, Where where) { return linalg::inv(A, where); }

}  // namespace ember
