// Backward rules of hardtanh_backward, hardswish_backward, hardsigmoid_backward, mish_backward and
// log_sigmoid_backward (backward_op_rules.h), in the notation of activation_backward_rules.cpp:
// d/d grad is the op itself on the incoming gradient, d/dx = incoming * grad * f''(x).
// hardtanh's and hardsigmoid's f'' is 0 away from their kinks: their backward ops mark the saved
// input nondifferentiable, as PyTorch's derivatives give it zeros.
#include "runtime/ops/activation_rule_helpers.h"
#include "runtime/ops/backward_op_rules.h"

namespace ember::ops {

using namespace activation_rules;

void hardtanh_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("hardtanh_backward", ctx, ctx.grad()));
}

void hardsigmoid_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("hardsigmoid_backward", ctx, ctx.grad()));
}

// f' = x / 3 + 1/2 on [-3, 3]: f'' = 1/3 strictly inside, 0 elsewhere (PyTorch's derivative of
// hardswish_backward).
void hardswish_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("hardswish_backward", ctx, ctx.grad()));
  if (!ctx.needs_input_grad[1]) return;
  const Tensor& x = ctx.input(1);
  const Tensor inside = logical_and(gt(x, full_like(x, -3.0)), lt(x, full_like(x, 3.0)));
  grads[1] = to_input(ctx, 1, only_where(inside, div(incoming_times_grad(ctx), 3.0)));
}

// f' = t + x s (1 - t^2) with t = tanh(softplus(x)), s = sigmoid(x) and t' = s (1 - t^2):
// f'' = s (1 - t^2) (2 + x (1 - s - 2 t s)).
void mish_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("mish_backward", ctx, ctx.grad()));
  if (!ctx.needs_input_grad[1]) return;
  const Tensor& x = ctx.input(1);
  const Tensor s = sigmoid(x);
  const Tensor t = tanh(softplus(x));
  const Tensor bracket = add(mul(x, sub(rsub(s, 1.0), mul(mul(t, s), 2.0))), 2.0);
  const Tensor second = mul(mul(s, rsub(mul(t, t), 1.0)), bracket);
  grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), second));
}

// f' = 1 - sigmoid(x): f'' = -s (1 - s).
void log_sigmoid_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("log_sigmoid_backward", ctx, ctx.grad()));
  if (!ctx.needs_input_grad[1]) return;
  const Tensor s = sigmoid(ctx.input(1));
  grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), mul(s, sub(s, 1.0))));
}

}  // namespace ember::ops
