// The less common elementwise math: tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh,
// log2, log10, exp2, erfc (integers become float32, as torch's do) and the broadcasting binary
// atan2 (floating), fmod and remainder (any dtype but bool). Math: kernels/math_functors.h.
// Backward formulas are PyTorch's derivatives.yaml, written with ember's ops so that they
// differentiate again.
#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

// d tan(x) = 1 + tan(x)^2: reuses the output.
void tan_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& out = ctx.output(0);
  grads[0] = mul(ctx.grad(), add(mul(out, out), 1.0));
}
// d asin(x) = 1 / sqrt(1 - x^2); acos is its negation.
void asin_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = mul(ctx.grad(), rsqrt(rsub(mul(x, x), 1.0)));
}
void acos_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = neg(mul(ctx.grad(), rsqrt(rsub(mul(x, x), 1.0))));
}
void atan_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = div(ctx.grad(), add(mul(x, x), 1.0));
}
void sinh_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), cosh(ctx.input(0)));
}
void cosh_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), sinh(ctx.input(0)));
}
// d asinh(x) = 1 / sqrt(x^2 + 1), d acosh(x) = 1 / sqrt(x^2 - 1), d atanh(x) = 1 / (1 - x^2).
void asinh_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = mul(ctx.grad(), rsqrt(add(mul(x, x), 1.0)));
}
void acosh_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = mul(ctx.grad(), rsqrt(sub(mul(x, x), 1.0)));
}
void atanh_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = div(ctx.grad(), rsub(mul(x, x), 1.0));
}
// d log_b(x) = 1 / (x ln b).
void log2_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = div(ctx.grad(), mul(ctx.input(0), std::numbers::ln2));
}
void log10_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = div(ctx.grad(), mul(ctx.input(0), std::numbers::ln10));
}
// d 2^x = 2^x ln 2: reuses the output.
void exp2_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), mul(ctx.output(0), std::numbers::ln2));
}
// d erfc(x) = -2 / sqrt(pi) e^(-x^2).
void erfc_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  grads[0] = mul(ctx.grad(), mul(exp(neg(mul(x, x))), -2.0 / std::sqrt(std::numbers::pi)));
}

// d atan2(a, b) = (b da - a db) / (a^2 + b^2).
void atan2_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor scale = div(ctx.grad(), add(mul(a, a), mul(b, b)));
  if (ctx.needs_input_grad[0]) grads[0] = reduce_grad(ctx, 0, mul(scale, b));
  if (ctx.needs_input_grad[1]) grads[1] = reduce_grad(ctx, 1, neg(mul(scale, a)));
}
// PyTorch's floor quotient of remainder's backward (c10's div_floor_floating): from fmod, so that
// it agrees with the forward's value where a / b rounds onto or across a whole number
// (remainder(1, 0.1) is 1 - 9 (0.1), and floor(1 / 0.1) would say 10); a / b where b is 0.
Tensor floor_quotient(const Tensor& a, const Tensor& b) {
  const Tensor mod = fmod(a, b);
  const Tensor quotient = div(sub(a, mod), b);  // a whole number up to rounding
  const Tensor zero = scalar_like(0.0, mod);
  const Tensor signs_differ = logical_and(ne(mod, zero), ne(lt(b, zero), lt(mod, zero)));
  const Tensor floored = round(ember::where(signs_differ, sub(quotient, 1.0), quotient));
  return ember::where(eq(b, zero), div(a, b), floored);
}

// a - q b with q = trunc(a / b) (fmod, PyTorch's div_trunc) or the floor quotient (remainder), q
// piecewise constant: the dividend's gradient passes, the divisor's is -q times it, as PyTorch's.
// The quotient of 16-bit operands is computed in float32 and rounded once, as PyTorch's div with a
// rounding mode computes in float: a bfloat16 a / b rounded before the floor can land on the next
// whole number (18.5 / 0.0986 is 187.6, and 188 in bfloat16).
void quotient_backward(const BackwardContext& ctx, std::span<Tensor> grads, bool floor_quotient_wanted) {
  if (ctx.needs_input_grad[0]) grads[0] = reduce_grad(ctx, 0, ctx.grad());
  if (ctx.needs_input_grad[1]) {
    const DType result = ctx.grad().dtype();
    const DType compute = result == kBFloat16 || result == kFloat16 ? kFloat32 : result;
    const Tensor a = to_dtype(ctx.input(0), compute);
    const Tensor b = to_dtype(ctx.input(1), compute);
    const Tensor quotient = floor_quotient_wanted ? floor_quotient(a, b) : trunc(div(a, b));
    grads[1] = reduce_grad(ctx, 1, neg(mul(ctx.grad(), to_dtype(quotient, result))));
  }
}
void fmod_backward(const BackwardContext& ctx, std::span<Tensor> grads) { quotient_backward(ctx, grads, false); }
void remainder_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  quotient_backward(ctx, grads, true);
}

// fmod and remainder promote like add; bool has no division (PyTorch's kernels have no bool form).
void modulo_shape(const OpCall& call, OutputMetas& outputs) {
  binary_shape(call, outputs);
  check(outputs[0].dtype != kBool, "{}: bool tensors are not supported (shapes {} and {})", call.op.name,
        call.input(0).sizes(), call.input(1).sizes());
}

// Whether an int32 or int64 CPU tensor holds a 0, read through its strides without dispatching an
// op (inside a capture a dispatched read would be recorded, and its item() a graph break).
template <typename T>
bool holds_zero(const Tensor& tensor) {
  const T* data = static_cast<const T*>(tensor.raw_data_ptr());
  const Dims& sizes = tensor.sizes();
  const Dims& strides = tensor.strides();
  const int rank = sizes.size();
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t n = 0; n < tensor.numel(); ++n) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) offset += index[d] * strides[d];
    if (data[offset] == T(0)) return true;
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return false;
}

// The divisor is checked in the result's dtype, as the loop reads it: an int64 2^32 divisor of
// an int32 tensor is 0 there.
template <typename Functor>
void modulo_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  const Tensor divisor = cpu::as_dtype(call.input(1), out.dtype());
  // An empty result divides nothing, whatever the broadcast divisor holds (PyTorch checks per
  // element).
  const bool zero = out.numel() == 0 ? false
                    : out.dtype() == kInt64 ? holds_zero<int64_t>(divisor)
                    : out.dtype() == kInt32 ? holds_zero<int32_t>(divisor)
                                            : false;
  if (zero) fail_integer_division_by_zero(call, out.dtype());
  cpu::binary_numeric(out, call.input(0), divisor, Functor{}, call.op.name);
}

struct UnaryMath {
  const char* name;
  const char* schema;
  Kernel kernel;
  BackwardRule backward;
  bool saves_output;  // the backward reads the output instead of the input
  const char* functor;
};

void register_math_ops(OpRegistry& registry) {
  const UnaryMath unary_ops[] = {
      {"tan", "tan(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Tan>, tan_backward, true, "ember::fn::Tan"},
      {"asin", "asin(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Asin>, asin_backward, false,
       "ember::fn::Asin"},
      {"acos", "acos(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Acos>, acos_backward, false,
       "ember::fn::Acos"},
      {"atan", "atan(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Atan>, atan_backward, false,
       "ember::fn::Atan"},
      {"sinh", "sinh(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Sinh>, sinh_backward, false,
       "ember::fn::Sinh"},
      {"cosh", "cosh(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Cosh>, cosh_backward, false,
       "ember::fn::Cosh"},
      {"asinh", "asinh(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Asinh>, asinh_backward, false,
       "ember::fn::Asinh"},
      {"acosh", "acosh(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Acosh>, acosh_backward, false,
       "ember::fn::Acosh"},
      {"atanh", "atanh(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Atanh>, atanh_backward, false,
       "ember::fn::Atanh"},
      {"log2", "log2(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Log2>, log2_backward, false,
       "ember::fn::Log2"},
      {"log10", "log10(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Log10>, log10_backward, false,
       "ember::fn::Log10"},
      {"exp2", "exp2(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Exp2>, exp2_backward, true,
       "ember::fn::Exp2"},
      {"erfc", "erfc(Tensor a) -> Tensor", cpu::unary_floating_kernel<fn::Erfc>, erfc_backward, false,
       "ember::fn::Erfc"},
  };
  for (const UnaryMath& op : unary_ops) {
    registry.add(pointwise_op(op.name, op.schema, unary_float_shape, op.kernel, op.backward,
                              op.saves_output ? 0 : 0b1, op.saves_output ? 0b1 : 0, op.functor));
  }
  registry.add(pointwise_op("atan2", "atan2(Tensor a, Tensor b) -> Tensor", binary_float_shape,
                            cpu::binary_floating_kernel<fn::Atan2>, atan2_backward, 0b11, 0, "ember::fn::Atan2"));
  registry.add(pointwise_op("fmod", "fmod(Tensor a, Tensor b) -> Tensor", modulo_shape, modulo_kernel<fn::Fmod>,
                            fmod_backward, 0b11, 0, "ember::fn::Fmod"));
  registry.add(pointwise_op("remainder", "remainder(Tensor a, Tensor b) -> Tensor", modulo_shape,
                            modulo_kernel<fn::Remainder>, remainder_backward, 0b11, 0, "ember::fn::Remainder"));
}

const OpRegistration registration(register_math_ops);

}  // namespace
}  // namespace ember::ops
