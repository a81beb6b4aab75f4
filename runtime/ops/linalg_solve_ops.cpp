// The LU-based ops of the solve family (runtime/linalg.h): linalg_lu_factor(A) -> (LU, pivots),
// linalg_lu_solve(LU, pivots, B; adjoint), linalg_solve(A, B; inverse) and linalg_slogdet(A) ->
// (sign, logabsdet). B has A's batch dims (the composites broadcast them). Backward rules:
//   X = A^-1 B:      gB = A^-T gX, gA = -gB X^T         (torch's linalg_solve_backward)
//   X = LU^-1 B:     gB = lu_solve(LU, pivots, gX, adjoint = !adjoint); none for LU (see linalg.h)
//   logabsdet(A):    gA = g A^-T; the sign has no gradient
// Kernels in kernels/cpu/linalg_solve_kernels.h and runtime/cuda/linalg_lu_cuda_ops.cpp.
#include "kernels/cpu/linalg_solve_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_shape_more.h"
#include "runtime/ops/linalg_solve_checks.h"

namespace ember::ops {

namespace {

void lu_factor_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  check_square_floating(call, a);
  outputs[0] = {a.sizes(), a.dtype(), a.device()};
  outputs[1] = {leading_dims(a.sizes(), 1), kInt32, a.device()};
}

void lu_solve_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& packed = call.input(0);
  const Tensor& pivots = call.input(1);
  const Tensor& b = call.input(2);
  check_square_floating(call, packed);
  check_right_hand_side(call, packed, b);
  const Dims pivot_sizes = leading_dims(packed.sizes(), 1);
  check(pivots.dtype() == kInt32 && pivots.sizes() == pivot_sizes,
        "{}: expected int32 pivots of shape {} for LU of shape {}, got {} of shape {}", call.op.name, pivot_sizes,
        packed.sizes(), pivots.dtype(), pivots.sizes());
  outputs[0] = {b.sizes(), b.dtype(), b.device()};
}

void solve_shape(const OpCall& call, OutputMetas& outputs) {
  check_square_floating(call, call.input(0));
  check_right_hand_side(call, call.input(0), call.input(1));
  outputs[0] = {call.input(1).sizes(), call.input(1).dtype(), call.input(1).device()};
}

void slogdet_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  check_square_floating(call, a);
  const Dims batch = leading_dims(a.sizes(), 2);
  outputs[0] = {batch, a.dtype(), a.device()};
  outputs[1] = {batch, a.dtype(), a.device()};
}

Tensor solve_with(const Tensor& a, const Tensor& b) {
  static const OpDef& solve = lookup_op("linalg_solve");
  return dispatch_one(solve, {a, b}, {{"inverse", false}});
}

void solve_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor grad_b = solve_with(matrix_transpose(ctx.input(0)), ctx.grad(0));
  if (ctx.needs_input_grad[0]) grads[0] = neg(matmul(grad_b, matrix_transpose(ctx.output(0))));
  if (ctx.needs_input_grad[1]) grads[1] = grad_b;
}

void lu_solve_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& lu_solve = lookup_op("linalg_lu_solve");
  grads[2] =
      dispatch_one(lu_solve, {ctx.input(0), ctx.input(1), ctx.grad(0)}, {{"adjoint", !ctx.attrs.get<bool>("adjoint")}});
}

void slogdet_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (!ctx.grad(1).defined()) return;
  const Tensor& a = ctx.input(0);
  const Tensor identity = expand(eye(a.size(-1), {.dtype = a.dtype(), .device = a.device()}), a.sizes());
  const Tensor inverse_transposed = solve_with(matrix_transpose(a), identity);
  grads[0] = mul(inverse_transposed, unsqueeze(unsqueeze(ctx.grad(1), -1), -1));
}

void register_linalg_solve_ops(OpRegistry& registry) {
  OpDef lu_factor = make_op("linalg_lu_factor", "linalg_lu_factor(Tensor A) -> (Tensor LU, Tensor pivots)",
                            OpKind::Other, lu_factor_shape, cpu::lu_factor_kernel);
  lu_factor.num_outputs = 2;
  registry.add(std::move(lu_factor));

  OpDef lu_solve =
      make_op("linalg_lu_solve", "linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, bool adjoint=False) -> Tensor",
              OpKind::Other, lu_solve_shape, cpu::lu_solve_kernel, lu_solve_backward);
  lu_solve.save_inputs = 0b011;
  lu_solve.nondifferentiable_inputs = 0b011;
  registry.add(std::move(lu_solve));

  OpDef solve = make_op("linalg_solve", "linalg_solve(Tensor A, Tensor B, bool inverse=False) -> Tensor", OpKind::Other,
                        solve_shape, cpu::solve_kernel, solve_backward);
  solve.save_inputs = 0b01;
  solve.save_outputs = 0b1;
  registry.add(std::move(solve));

  OpDef slogdet = make_op("linalg_slogdet", "linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)",
                          OpKind::Other, slogdet_shape, cpu::slogdet_kernel, slogdet_backward);
  slogdet.num_outputs = 2;
  slogdet.save_inputs = 0b1;
  registry.add(std::move(slogdet));
}

const OpRegistration registration(register_linalg_solve_ops);

}  // namespace
}  // namespace ember::ops
