// Backward rules of the activations' backward ops (backward_op_rules.h). Notation: the op computes
// grad_input = grad * f'(x) (or f' stated in the saved output y); `incoming` is the gradient of
// grad_input. Then d/d grad = incoming * f'(x), the op itself, and d/dx = incoming * grad * f''(x).
// Piecewise-linear activations (relu, leaky_relu) have f'' = 0 away from their kink: their
// backward ops mark the saved tensor nondifferentiable (a mask), as PyTorch's threshold_backward
// and leaky_relu_backward derivatives give it zeros.
#include "kernels/functor_math.h"
#include "runtime/ops/activation_rule_helpers.h"
#include "runtime/ops/backward_op_rules.h"

namespace ember::ops {

using namespace activation_rules;

void relu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("relu_backward", ctx, ctx.grad()));
}

void leaky_relu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("leaky_relu_backward", ctx, ctx.grad()));
}

// y = sigmoid(x), f' = y (1 - y): d/dy = 1 - 2y.
void sigmoid_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("sigmoid_backward", ctx, ctx.grad()));
  if (ctx.needs_input_grad[1])
    grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), rsub(mul(ctx.input(1), 2.0), 1.0)));
}

// y = tanh(x), f' = 1 - y^2: d/dy = -2y.
void tanh_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("tanh_backward", ctx, ctx.grad()));
  if (ctx.needs_input_grad[1]) grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), mul(ctx.input(1), -2.0)));
}

// f' = s (1 + x (1 - s)) with s = sigmoid(x); f'' = s (1 - s) (2 + x (1 - 2s)).
void silu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("silu_backward", ctx, ctx.grad()));
  if (!ctx.needs_input_grad[1]) return;
  const Tensor& x = ctx.input(1);
  const Tensor s = sigmoid(x);
  const Tensor slope = mul(s, rsub(s, 1.0));
  grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), mul(slope, add(mul(x, rsub(mul(s, 2.0), 1.0)), 2.0))));
}

// Exact GELU: f' = Phi(x) + x phi(x), f'' = phi(x) (2 - x^2) with phi(x) = e^(-x^2/2) / sqrt(2 pi).
// Tanh approximation: f = x (1 + T) / 2 with T = tanh(u), u = b (x + k x^3), u' = b (1 + 3k x^2);
// f'' = (1 - T^2) (u' - x T u'^2 + 3 b k x^2).
void gelu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("gelu_backward", ctx, ctx.grad()));
  if (!ctx.needs_input_grad[1]) return;
  const Tensor& x = ctx.input(1);
  const Tensor x_squared = mul(x, x);
  Tensor second;
  if (!ctx.attrs.get<bool>("tanh")) {
    constexpr double kInverseSqrtTwoPi = 0.39894228040143267794;
    const Tensor density = mul(exp(mul(x_squared, -0.5)), kInverseSqrtTwoPi);
    second = mul(density, rsub(x_squared, 2.0));
  } else {
    const double b = fn::detail::kSqrtTwoOverPi, k = fn::detail::kGeluKappa;
    const Tensor t = tanh(mul(add(x, mul(mul(x_squared, x), k)), b));
    const Tensor inner_slope = mul(add(mul(x_squared, 3.0 * k), 1.0), b);
    const Tensor bracket =
        add(sub(inner_slope, mul(mul(x, t), mul(inner_slope, inner_slope))), mul(x_squared, 3.0 * b * k));
    second = mul(rsub(mul(t, t), 1.0), bracket);
  }
  grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), second));
}

// f' = alpha e^x for x <= 0, else 1: f'' = alpha e^x for x <= 0, else 0.
void elu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("elu_backward", ctx, ctx.grad()));
  if (!ctx.needs_input_grad[1]) return;
  const Tensor& x = ctx.input(1);
  const Tensor curvature = mul(exp(x), ctx.attrs.get<double>("alpha"));
  grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), only_where(le(x, zeros_like(x)), curvature)));
}

// f' = sigmoid(beta x), 1 past the threshold: f'' = beta s (1 - s), 0 past it.
void softplus_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = to_input(ctx, 0, same_op_on("softplus_backward", ctx, ctx.grad()));
  if (!ctx.needs_input_grad[1]) return;
  const double beta = ctx.attrs.get<double>("beta");
  const Tensor scaled = mul(ctx.input(1), beta);
  const Tensor s = sigmoid(scaled);
  const Tensor curvature = mul(mul(s, rsub(s, 1.0)), beta);
  const Tensor below_threshold = le(scaled, full_like(scaled, ctx.attrs.get<double>("threshold")));
  grads[1] = to_input(ctx, 1, mul(incoming_times_grad(ctx), only_where(below_threshold, curvature)));
}

}  // namespace ember::ops
