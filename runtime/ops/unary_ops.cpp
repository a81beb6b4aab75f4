// Elementwise math of one tensor: neg, exp, expm1, log, log1p, erf, sin, cos, sqrt, rsqrt, abs,
// sign, reciprocal, clamp and the rounding ops floor, ceil, round, trunc. Math: kernels/functors.h.
// Dtypes follow PyTorch: the transcendental ops turn integer inputs into float32; neg, abs, sign,
// clamp and the rounding ops keep integer dtypes (bool only where PyTorch allows it). Activations
// live in activation_ops.cpp.
#include <cmath>
#include <limits>
#include <numbers>

#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

// neg and abs of a bool tensor are errors in PyTorch: `-mask` is almost always meant as `~mask`.
void numeric_shape(const OpCall& call, OutputMetas& outputs) {
  check(call.input(0).dtype() != kBool,
        "{}: bool tensors are not supported (shape {}); for masks use logical operations instead",
        call.op.name, call.input(0).sizes());
  unary_shape(call, outputs);
}

// floor, ceil, round and trunc keep an integer tensor's dtype and values, as PyTorch's do; its
// kernels have no bool form either.
void rounding_shape(const OpCall& call, OutputMetas& outputs) {
  check(call.input(0).dtype() != kBool, "{}: bool tensors are not supported (shape {})", call.op.name,
        call.input(0).sizes());
  unary_shape(call, outputs);
}

// clamp: at least one bound; an integer tensor with a non-integral bound becomes float32 and a
// bool tensor becomes int64, like PyTorch's promotion with scalars.
void clamp_shape(const OpCall& call, OutputMetas& outputs) {
  const DType input = call.input(0).dtype();
  check(call.attrs.has("min") || call.attrs.has("max"),
        "clamp: at least one of min and max must be given (tensor of shape {})", call.input(0).sizes());
  DType result = input;
  for (const char* bound : {"min", "max"}) {
    if (!call.attrs.has(bound)) continue;
    const DType with_bound = scalar_result_dtype("clamp", input, call.attrs.get<double>(bound), true);
    result = result == kBool ? with_bound : promote_types(result, with_bound);
  }
  // An integral bound past the result type's range saturates to its end, which is harmless for a
  // min below the range or a max above it, and wrong for the other two: every element would
  // have to be a value the type cannot hold.
  if (result == kInt32 || result == kInt64) {
    const double limit = result == kInt32 ? 2147483648.0 : 9223372036854775808.0;
    const double min = call.attrs.get_or<double>("min", -limit);
    const double max = call.attrs.get_or<double>("max", limit - 1);
    check(min < limit, "clamp: min {} is above every {} value (the largest is {})", min, result,
          result == kInt32 ? "2147483647" : "9223372036854775807");
    check(max >= -limit, "clamp: max {} is below every {} value (the smallest is {})", max, result, -limit);
  }
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = result;
}

fn::Clamp clamp_functor(const Attrs& attrs) {
  constexpr double infinity = std::numeric_limits<double>::infinity();
  return fn::Clamp{attrs.get_or<double>("min", -infinity), attrs.get_or<double>("max", infinity)};
}

void clamp_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_numeric(out[0], call.input(0), clamp_functor(call.attrs), call.op.name);
}

void neg_backward(const BackwardContext& ctx, std::span<Tensor> grads) { grads[0] = neg(ctx.grad()); }
void exp_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), ctx.output(0));
}
// d(e^x - 1) = e^x = out + 1, as PyTorch's derivative.
void expm1_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), add(ctx.output(0), 1.0));
}
// d erf(x) = 2 / sqrt(pi) e^(-x^2).
void erf_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& input = ctx.input(0);
  grads[0] = mul(ctx.grad(), mul(exp(neg(mul(input, input))), 2.0 / std::sqrt(std::numbers::pi)));
}
void sin_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), cos(ctx.input(0)));
}
void cos_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), neg(sin(ctx.input(0))));
}
void log_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = div(ctx.grad(), ctx.input(0));
}
void log1p_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = div(ctx.grad(), add(ctx.input(0), 1.0));
}
// d sqrt(x) = 1 / (2 sqrt(x)): reuses the output.
void sqrt_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = div(ctx.grad(), mul(ctx.output(0), 2.0));
}
// d x^-1/2 = -1/2 x^-3/2 = -out^3 / 2.
void rsqrt_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), mul(pow(ctx.output(0), 3.0), -0.5));
}
void abs_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), sign(ctx.input(0)));
}
// sign and the rounding ops are piecewise constant: zero almost everywhere, and zero at their
// jumps too, as in PyTorch.
void zero_backward(const BackwardContext& ctx, std::span<Tensor> grads) { grads[0] = zeros_like(ctx.grad()); }
// d (1/x) = -1/x^2 = -out^2.
void reciprocal_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& output = ctx.output(0);
  grads[0] = neg(mul(ctx.grad(), mul(output, output)));
}
// The gradient passes where min <= x <= max (bounds included, like PyTorch) and is zero elsewhere.
void clamp_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& input = ctx.input(0);
  Tensor inside;
  if (ctx.attrs.has("min")) inside = ge(input, scalar_like(ctx.attrs.get<double>("min"), input));
  if (ctx.attrs.has("max")) {
    const Tensor below_max = le(input, scalar_like(ctx.attrs.get<double>("max"), input));
    inside = inside.defined() ? mul(inside, below_max) : below_max;  // bool mul is "and"
  }
  grads[0] = where(inside, ctx.grad(), scalar_like(0.0, ctx.grad()));
}

void register_unary_ops(OpRegistry& registry) {
  registry.add(pointwise_op("neg", "neg(Tensor a) -> Tensor", numeric_shape, cpu::unary_numeric_kernel<fn::Neg>,
                            neg_backward, 0, 0, "ember::fn::Neg"));
  registry.add(pointwise_op("exp", "exp(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Exp>, exp_backward, 0, 0b1, "ember::fn::Exp"));
  registry.add(pointwise_op("expm1", "expm1(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Expm1>, expm1_backward, 0, 0b1, "ember::fn::Expm1"));
  registry.add(pointwise_op("erf", "erf(Tensor a) -> Tensor", unary_float_shape, cpu::unary_floating_kernel<fn::Erf>,
                            erf_backward, 0b1, 0, "ember::fn::Erf"));
  registry.add(pointwise_op("sin", "sin(Tensor a) -> Tensor", unary_float_shape, cpu::unary_floating_kernel<fn::Sin>,
                            sin_backward, 0b1, 0, "ember::fn::Sin"));
  registry.add(pointwise_op("cos", "cos(Tensor a) -> Tensor", unary_float_shape, cpu::unary_floating_kernel<fn::Cos>,
                            cos_backward, 0b1, 0, "ember::fn::Cos"));
  registry.add(pointwise_op("log", "log(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Log>, log_backward, 0b1, 0, "ember::fn::Log"));
  registry.add(pointwise_op("log1p", "log1p(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Log1p>, log1p_backward, 0b1, 0,
                            "ember::fn::Log1p"));
  registry.add(pointwise_op("sqrt", "sqrt(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Sqrt>, sqrt_backward, 0, 0b1, "ember::fn::Sqrt"));
  registry.add(pointwise_op("rsqrt", "rsqrt(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Rsqrt>, rsqrt_backward, 0, 0b1,
                            "ember::fn::Rsqrt"));
  registry.add(pointwise_op("abs", "abs(Tensor a) -> Tensor", numeric_shape, cpu::unary_numeric_kernel<fn::Abs>,
                            abs_backward, 0b1, 0, "ember::fn::Abs"));
  registry.add(pointwise_op("sign", "sign(Tensor a) -> Tensor", unary_shape, cpu::unary_any_kernel<fn::Sign>,
                            zero_backward, 0, 0, "ember::fn::Sign"));
  registry.add(pointwise_op("reciprocal", "reciprocal(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Reciprocal>, reciprocal_backward, 0, 0b1,
                            "ember::fn::Reciprocal"));
  registry.add(pointwise_op("floor", "floor(Tensor a) -> Tensor", rounding_shape, cpu::unary_numeric_kernel<fn::Floor>,
                            zero_backward, 0, 0, "ember::fn::Floor"));
  registry.add(pointwise_op("ceil", "ceil(Tensor a) -> Tensor", rounding_shape, cpu::unary_numeric_kernel<fn::Ceil>,
                            zero_backward, 0, 0, "ember::fn::Ceil"));
  registry.add(pointwise_op("round", "round(Tensor a) -> Tensor", rounding_shape, cpu::unary_numeric_kernel<fn::Round>,
                            zero_backward, 0, 0, "ember::fn::Round"));
  registry.add(pointwise_op("trunc", "trunc(Tensor a) -> Tensor", rounding_shape, cpu::unary_numeric_kernel<fn::Trunc>,
                            zero_backward, 0, 0, "ember::fn::Trunc"));
  registry.add(pointwise_op("clamp", "clamp(Tensor a, float? min, float? max) -> Tensor", clamp_shape,
                            clamp_kernel, clamp_backward, 0b1, 0, "ember::fn::Clamp"));
}

const OpRegistration registration(register_unary_ops);

}  // namespace
}  // namespace ember::ops
