// maximum, minimum, pow (tensor-tensor, broadcasting) and the host-scalar ops div_scalar,
// pow_scalar, rsub_scalar, rdiv_scalar. Math: kernels/functors.h. Backward formulas follow
// PyTorch 1.13's derivatives.yaml, ties and zero bases included.
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

double value_of(const OpCall& call) { return call.attrs.get<double>("value"); }

void pow_shape(const OpCall& call, OutputMetas& outputs) {
  binary_shape(call, outputs);
  check(outputs[0].dtype != kBool, "pow: bool tensors are not supported (shapes {} and {})",
        call.input(0).sizes(), call.input(1).sizes());
}

// Integer tensors to negative integral powers are an error in PyTorch (the result is not an
// integer); a non-integral exponent promotes to float32 instead.
void pow_scalar_shape(const OpCall& call, OutputMetas& outputs) {
  scalar_shape(call, outputs);
  check(is_floating(outputs[0].dtype) || value_of(call) >= 0.0,
        "pow_scalar: integers to negative integer powers are not allowed ({} tensor of shape {}, "
        "exponent {})",
        call.input(0).dtype(), call.input(0).sizes(), value_of(call));
}

void rsub_scalar_shape(const OpCall& call, OutputMetas& outputs) {
  check(call.input(0).dtype() != kBool,
        "rsub_scalar: subtraction with a bool tensor is not supported (shape {}); for masks use "
        "logical operations instead",
        call.input(0).sizes());
  scalar_shape(call, outputs);
}

void div_scalar_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_floating(out[0], call.input(0), fn::DivScalar{value_of(call)}, call.op.name);
}
void rdiv_scalar_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_floating(out[0], call.input(0), fn::RdivScalar{value_of(call)}, call.op.name);
}
void pow_scalar_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_numeric(out[0], call.input(0), fn::PowScalar{value_of(call)}, call.op.name);
}
void rsub_scalar_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_numeric(out[0], call.input(0), fn::RsubScalar{value_of(call)}, call.op.name);
}

// maximum/minimum: the winner gets the gradient, ties split it evenly (PyTorch 1.13).
// `loses_a` marks elements where a lost, `loses_b` where b lost.
void extremum_backward(const BackwardContext& ctx, std::span<Tensor> grads, const Tensor& loses_a,
                       const Tensor& loses_b) {
  const Tensor& grad = ctx.grad();
  const Tensor zero = scalar_like(0.0, grad);
  const Tensor shared = where(eq(ctx.input(0), ctx.input(1)), mul(grad, 0.5), grad);
  if (ctx.needs_input_grad[0]) grads[0] = reduce_grad(ctx, 0, where(loses_a, zero, shared));
  if (ctx.needs_input_grad[1]) grads[1] = reduce_grad(ctx, 1, where(loses_b, zero, shared));
}
void maximum_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  extremum_backward(ctx, grads, lt(ctx.input(0), ctx.input(1)), gt(ctx.input(0), ctx.input(1)));
}
void minimum_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  extremum_backward(ctx, grads, gt(ctx.input(0), ctx.input(1)), lt(ctx.input(0), ctx.input(1)));
}

// d(a^b)/da = b a^(b-1), zero where b == 0 (so 0^0 does not give 0 * inf);
// d(a^b)/db = a^b log(a), zero where a == 0 and b >= 0 (NaN for negative bases, as in PyTorch).
// log(a) is taken in the result's dtype, as PyTorch's pow_backward_exponent converts the base to
// result_type first: an int64 base with a float64 exponent would otherwise log in float32, and a
// float16 base with a float32 exponent in float16 (a 1e-4 relative error in the gradient).
void pow_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& grad = ctx.grad();
  const Tensor& base = ctx.input(0);
  const Tensor& exponent = ctx.input(1);
  const Tensor zero = scalar_like(0.0, grad);
  if (ctx.needs_input_grad[0]) {
    const Tensor local = mul(exponent, pow(base, sub(exponent, 1.0)));
    grads[0] = reduce_grad(ctx, 0, where(eq(exponent, zero), zero, mul(grad, local)));
  }
  if (ctx.needs_input_grad[1]) {
    const Tensor base_is_zero = mul(eq(base, zero), ge(exponent, zero));  // bool mul is "and"
    const Tensor& result = ctx.output(0);
    const Tensor promoted_base = base.dtype() == result.dtype() ? base : to_dtype(base, result.dtype());
    const Tensor local = where(base_is_zero, zero, mul(result, log(promoted_base)));
    grads[1] = reduce_grad(ctx, 1, mul(grad, local));
  }
}

void div_scalar_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = div(ctx.grad(), ctx.attrs.get<double>("value"));
}
void pow_scalar_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const double exponent = ctx.attrs.get<double>("value");
  if (exponent == 0.0) {
    grads[0] = zeros_like(ctx.grad());
  } else {
    grads[0] = mul(ctx.grad(), mul(pow(ctx.input(0), exponent - 1.0), exponent));
  }
}
void rsub_scalar_backward(const BackwardContext& ctx, std::span<Tensor> grads) { grads[0] = neg(ctx.grad()); }
// d(v/a)/da = -v / a^2 = -out / a.
void rdiv_scalar_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = neg(mul(ctx.grad(), div(ctx.output(0), ctx.input(0))));
}

void register_binary_ops(OpRegistry& registry) {
  registry.add(pointwise_op("maximum", "maximum(Tensor a, Tensor b) -> Tensor", binary_shape,
                            cpu::binary_any_kernel<fn::Maximum>, maximum_backward, 0b11, 0,
                            "ember::fn::Maximum"));
  registry.add(pointwise_op("minimum", "minimum(Tensor a, Tensor b) -> Tensor", binary_shape,
                            cpu::binary_any_kernel<fn::Minimum>, minimum_backward, 0b11, 0,
                            "ember::fn::Minimum"));
  registry.add(pointwise_op("pow", "pow(Tensor a, Tensor exponent) -> Tensor", pow_shape,
                            cpu::binary_numeric_kernel<fn::Pow>, pow_backward, 0b11, 0b1,
                            "ember::fn::Pow"));
  registry.add(pointwise_op("div_scalar", "div_scalar(Tensor a, float value) -> Tensor",
                            scalar_float_shape, div_scalar_kernel, div_scalar_backward, 0, 0,
                            "ember::fn::DivScalar"));
  registry.add(pointwise_op("pow_scalar", "pow_scalar(Tensor a, float value) -> Tensor", pow_scalar_shape,
                            pow_scalar_kernel, pow_scalar_backward, 0b1, 0, "ember::fn::PowScalar"));
  registry.add(pointwise_op("rsub_scalar", "rsub_scalar(Tensor a, float value) -> Tensor",
                            rsub_scalar_shape, rsub_scalar_kernel, rsub_scalar_backward, 0, 0,
                            "ember::fn::RsubScalar"));
  registry.add(pointwise_op("rdiv_scalar", "rdiv_scalar(Tensor a, float value) -> Tensor",
                            scalar_float_shape, rdiv_scalar_kernel, rdiv_scalar_backward, 0b1, 0b1,
                            "ember::fn::RdivScalar"));
}

const OpRegistration registration(register_binary_ops);

}  // namespace
}  // namespace ember::ops
