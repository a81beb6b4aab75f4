// The triangular ops of the solve family (runtime/linalg.h): linalg_cholesky(A) -> lower L, and
// linalg_solve_triangular(A, B; upper, unitriangular) -> X with A X = B. Backward rules (torch's):
//   L = cholesky(A): gA = L^-T Phi L^-1, Phi = P + tril(P, -1)^T halved, P = tril(L^T gL): the
//                    symmetric gradient of A (cholesky reads one triangle of a symmetric matrix)
//   X = A^-1 B:      gB = A^-T gX (the other triangle), gA = -gB X^T kept on A's triangle, without
//                    the diagonal when unitriangular (those elements are never read)
// Kernels in kernels/cpu/linalg_solve_kernels.h and runtime/cuda/linalg_cholesky_cuda_ops.cpp.
#include "kernels/cpu/linalg_solve_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_shape_ops.h"
#include "runtime/ops/linalg_solve_checks.h"

namespace ember::ops {

namespace {

void cholesky_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  check_square_floating(call, a);
  outputs[0] = {a.sizes(), a.dtype(), a.device()};
}

void solve_triangular_shape(const OpCall& call, OutputMetas& outputs) {
  check_square_floating(call, call.input(0));
  check_right_hand_side(call, call.input(0), call.input(1));
  outputs[0] = {call.input(1).sizes(), call.input(1).dtype(), call.input(1).device()};
}

Tensor solve_triangular_with(const Tensor& a, const Tensor& b, bool upper, bool unitriangular) {
  static const OpDef& op = lookup_op("linalg_solve_triangular");
  return dispatch_one(op, {a, b}, {{"upper", upper}, {"unitriangular", unitriangular}});
}

void cholesky_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& l = ctx.output(0);
  const Tensor l_transposed = matrix_transpose(l);
  // tril(L^T gL) needs only gL's lower triangle: L^T times a strictly upper matrix is strictly upper.
  const Tensor product = tril(matmul(l_transposed, ctx.grad(0)));
  const Tensor phi = mul(add(product, matrix_transpose(tril(product, -1))), 0.5);
  // L^-T phi, then (L^-T phi) L^-1 as the transpose of L^-T (L^-T phi)^T.
  const Tensor left = solve_triangular_with(l_transposed, phi, true, false);
  grads[0] = matrix_transpose(solve_triangular_with(l_transposed, matrix_transpose(left), true, false));
}

void solve_triangular_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const bool upper = ctx.attrs.get<bool>("upper");
  const bool unitriangular = ctx.attrs.get<bool>("unitriangular");
  const Tensor& a = ctx.input(0);
  const Tensor grad_b = solve_triangular_with(matrix_transpose(a), ctx.grad(0), !upper, unitriangular);
  if (ctx.needs_input_grad[1]) grads[1] = grad_b;
  if (ctx.needs_input_grad[0]) {
    const Tensor full = neg(matmul(grad_b, matrix_transpose(ctx.output(0))));
    const int64_t diagonal = unitriangular ? 1 : 0;
    grads[0] = upper ? triu(full, diagonal) : tril(full, -diagonal);
  }
}

void register_linalg_cholesky_ops(OpRegistry& registry) {
  OpDef cholesky = make_op("linalg_cholesky", "linalg_cholesky(Tensor A) -> Tensor L", OpKind::Other, cholesky_shape,
                           cpu::cholesky_kernel, cholesky_backward);
  cholesky.save_outputs = 0b1;
  registry.add(std::move(cholesky));

  OpDef solve_triangular =
      make_op("linalg_solve_triangular",
              "linalg_solve_triangular(Tensor A, Tensor B, bool upper, bool unitriangular=False) -> Tensor",
              OpKind::Other, solve_triangular_shape, cpu::solve_triangular_kernel, solve_triangular_backward);
  solve_triangular.save_inputs = 0b01;
  solve_triangular.save_outputs = 0b1;
  registry.add(std::move(solve_triangular));
}

const OpRegistration registration(register_linalg_cholesky_ops);

}  // namespace
}  // namespace ember::ops
