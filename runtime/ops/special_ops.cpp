// torch.special's pointwise functions as registry ops: lgamma, digamma, polygamma (an int attribute
// n), erfinv, i0, i0e, i1, i1e, ndtri, log_ndtr and erfcx. Integers become float32, as torch's do.
// Math: kernels/special_functors.h. Backward formulas are PyTorch's derivatives.yaml, written with
// ember's ops (runtime/special.h) so that they differentiate again.
#include <cmath>
#include <numbers>

#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/special.h"

namespace ember::ops {

namespace {

const double kSqrtPi = std::sqrt(std::numbers::pi);

void lgamma_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), digamma(ctx.input(0)));
}
void digamma_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), polygamma(1, ctx.input(0)));
}
void polygamma_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), polygamma(ctx.attrs.get<int64_t>("n") + 1, ctx.input(0)));
}
// d erfinv(x) = sqrt(pi) / 2 e^(erfinv(x)^2): reuses the output.
void erfinv_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& out = ctx.output(0);
  grads[0] = mul(ctx.grad(), mul(exp(mul(out, out)), kSqrtPi / 2));
}
void i0_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), special::i1(ctx.input(0)));
}
// d i0e(x) = i1e(x) - sign(x) i0e(x).
void i0e_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = mul(ctx.grad(), sub(special::i1e(x), mul(sign(x), ctx.output(0))));
}
// d i1(x) = i0(x) - i1(x) / x and d i1e(x) = i0e(x) - i1e(x) (sign(x) + 1 / x), both 1/2 at 0. The
// division reads 1 where x == 0, so no 0 / 0 enters where's unused branch (or its gradient).
Tensor safe_divisor(const Tensor& x) { return ember::where(eq(x, scalar_like(0.0, x)), scalar_like(1.0, x), x); }
Tensor half_at_zero(const Tensor& x, const Tensor& value) {
  return ember::where(eq(x, scalar_like(0.0, x)), scalar_like(0.5, value), value);
}
void i1_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  const Tensor value = sub(special::i0(x), div(ctx.output(0), safe_divisor(x)));
  grads[0] = mul(ctx.grad(), half_at_zero(x, value));
}
void i1e_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  const Tensor factor = add(sign(x), reciprocal(safe_divisor(x)));
  const Tensor value = sub(special::i0e(x), mul(ctx.output(0), factor));
  grads[0] = mul(ctx.grad(), half_at_zero(x, value));
}
// d ndtri(p) = sqrt(2 pi) e^(ndtri(p)^2 / 2): reuses the output.
void ndtri_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& out = ctx.output(0);
  grads[0] = mul(ctx.grad(), mul(exp(mul(mul(out, out), 0.5)), std::sqrt(2 * std::numbers::pi)));
}
// d log_ndtr(x) = phi(x) / Phi(x) = e^(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi): the exponent stays
// moderate (about log|x|) where phi and Phi both underflow.
void log_ndtr_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  const Tensor exponent = sub(mul(mul(x, x), -0.5), ctx.output(0));
  grads[0] = mul(ctx.grad(), mul(exp(exponent), 1 / std::sqrt(2 * std::numbers::pi)));
}
// d erfcx(x) = 2 x erfcx(x) - 2 / sqrt(pi).
void erfcx_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = mul(ctx.grad(), sub(mul(mul(x, ctx.output(0)), 2.0), 2 / kSqrtPi));
}

// polygamma's order: torch's error for a negative one, raised before any kernel runs.
void polygamma_shape(const OpCall& call, OutputMetas& outputs) {
  const int64_t n = call.attrs.get<int64_t>("n");
  check(n >= 0, "{}: n must be >= 0, got n = {} (polygamma(n, x) does not support negative n; input {})", call.op.name,
        n, call.input(0).sizes());
  unary_float_shape(call, outputs);
}
void polygamma_kernel(const OpCall& call, TensorList& outputs) {
  cpu::unary_floating(outputs[0], call.input(0), fn::Polygamma{call.attrs.get<int64_t>("n")}, call.op.name);
}

struct SpecialUnary {
  const char* name;
  const char* schema;
  Kernel kernel;
  BackwardRule backward;
  uint32_t save_inputs;
  uint32_t save_outputs;
  const char* functor;
};

void register_special_ops(OpRegistry& registry) {
  const SpecialUnary unary_ops[] = {
      {"lgamma", "lgamma(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Lgamma>, lgamma_backward, 0b1, 0,
       "ember::fn::Lgamma"},
      {"digamma", "digamma(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Digamma>, digamma_backward, 0b1, 0,
       "ember::fn::Digamma"},
      {"erfinv", "erfinv(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Erfinv>, erfinv_backward, 0, 0b1,
       "ember::fn::Erfinv"},
      {"i0", "i0(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::I0>, i0_backward, 0b1, 0, "ember::fn::I0"},
      {"i0e", "i0e(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::I0e>, i0e_backward, 0b1, 0b1, "ember::fn::I0e"},
      {"i1", "i1(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::I1>, i1_backward, 0b1, 0b1, "ember::fn::I1"},
      {"i1e", "i1e(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::I1e>, i1e_backward, 0b1, 0b1, "ember::fn::I1e"},
      {"ndtri", "ndtri(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Ndtri>, ndtri_backward, 0, 0b1,
       "ember::fn::Ndtri"},
      {"log_ndtr", "log_ndtr(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::LogNdtr>, log_ndtr_backward, 0b1, 0b1,
       "ember::fn::LogNdtr"},
      {"erfcx", "erfcx(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Erfcx>, erfcx_backward, 0b1, 0b1,
       "ember::fn::Erfcx"},
  };
  for (const SpecialUnary& op : unary_ops) {
    registry.add(pointwise_op(op.name, op.schema, unary_float_shape, op.kernel, op.backward, op.save_inputs,
                              op.save_outputs, op.functor));
  }
  registry.add(pointwise_op("polygamma", "polygamma(Tensor a, int n) -> Tensor", polygamma_shape, polygamma_kernel,
                            polygamma_backward, 0b1, 0, "ember::fn::Polygamma"));
}

const OpRegistration registration(register_special_ops);

}  // namespace
}  // namespace ember::ops
