// add, sub, mul, div (tensor-tensor, broadcasting), their in-place forms add_ and mul_, and the
// host-scalar forms add_scalar, mul_scalar, mul_scalar_. Math: kernels/functors.h. Dtypes follow
// PyTorch: div is true division (int / int is float32), bool subtraction is an error, and a
// scalar promotes an integer tensor only when it is not integral (see scalar_result_dtype).
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

double alpha_of(const OpCall& call) { return call.attrs.get<double>("alpha"); }

// PyTorch refuses bool subtraction: `a - b` on masks is almost always a bug for `a & ~b`.
void sub_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  check(a.dtype() != kBool && b.dtype() != kBool,
        "sub: subtraction with a bool tensor is not supported (dtypes {} and {}, shapes {} and {}); "
        "for masks use logical operations instead",
        a.dtype(), b.dtype(), a.sizes(), b.sizes());
  binary_shape(call, outputs);
  check_integer_alpha(call, outputs[0].dtype);
}
void add_shape(const OpCall& call, OutputMetas& outputs) {
  binary_shape(call, outputs);
  check_integer_alpha(call, outputs[0].dtype);
}

// A 0-d operand of another dtype than a 16-bit float result is read unrounded, as in PyTorch
// (see cpu::unrounded_scalar_operand); every other call converts both operands to out's dtype.
template <typename Functor>
void arithmetic(const Tensor& out, const Tensor& a, const Tensor& b, Functor functor) {
  if (!cpu::binary_unrounded_scalar(out, a, b, functor)) cpu::binary_same_dtype(out, a, b, functor);
}

void add_kernel(const OpCall& call, TensorList& out) {
  arithmetic(out[0], call.input(0), call.input(1), fn::Add{alpha_of(call)});
}
void sub_kernel(const OpCall& call, TensorList& out) {
  arithmetic(out[0], call.input(0), call.input(1), fn::Sub{alpha_of(call)});
}
void mul_kernel(const OpCall& call, TensorList& out) { arithmetic(out[0], call.input(0), call.input(1), fn::Mul{}); }
void div_kernel(const OpCall& call, TensorList& out) {
  if (!cpu::binary_unrounded_scalar(out[0], call.input(0), call.input(1), fn::Div{}))
    cpu::binary_floating(out[0], call.input(0), call.input(1), fn::Div{}, call.op.name);
}
// add_ and mul_ compute in result_type of target and operand, as PyTorch does: when that is wider
// than the target (float16 += float32) the result is rounded once into the target.
DType inplace_compute_dtype(const OpCall& call) {
  const Tensor& target = call.input(0);
  const Tensor& other = call.input(1);
  return result_type(target.dtype(), target.dim() == 0, other.dtype(), other.dim() == 0);
}
template <typename Functor>
void inplace_arithmetic(const OpCall& call, DType compute, const Tensor& target, Functor functor) {
  if (compute != target.dtype()) {
    cpu::binary_inplace_promoted(target, call.input(1), compute, functor);
  } else {
    arithmetic(target, call.input(0), call.input(1), functor);
  }
}
void add_inplace_kernel(const OpCall& call, TensorList& out) {
  check_inplace_broadcast(call);
  const DType compute = inplace_compute_dtype(call);
  check_inplace_dtype(call, compute);
  check_integer_alpha(call, call.input(0).dtype());
  inplace_arithmetic(call, compute, out[0], fn::Add{alpha_of(call)});
}
void mul_inplace_kernel(const OpCall& call, TensorList& out) {
  check_inplace_broadcast(call);
  const DType compute = inplace_compute_dtype(call);
  check_inplace_dtype(call, compute);
  inplace_arithmetic(call, compute, out[0], fn::Mul{});
}
void add_scalar_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_same_dtype(out[0], call.input(0), fn::AddScalar{call.attrs.get<double>("value")});
}
void mul_scalar_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_same_dtype(out[0], call.input(0), fn::MulScalar{call.attrs.get<double>("value")});
}
void mul_scalar_inplace_kernel(const OpCall& call, TensorList& out) {
  const double value = call.attrs.get<double>("value");
  check_inplace_dtype(call, scalar_result_dtype(call.op.name, call.input(0).dtype(), value));
  cpu::unary_same_dtype(out[0], call.input(0), fn::MulScalar{value});
}

// Gradients of broadcast inputs are summed back to each input's shape.
Tensor reduce_to_input(const BackwardContext& ctx, int i, const Tensor& grad) {
  return sum_to_size(grad, ctx.input_metas[i].sizes);
}

void add_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const double alpha = ctx.attrs.get<double>("alpha");
  if (ctx.needs_input_grad[0]) grads[0] = reduce_to_input(ctx, 0, ctx.grad());
  if (ctx.needs_input_grad[1])
    grads[1] = reduce_to_input(ctx, 1, alpha == 1.0 ? ctx.grad() : mul(ctx.grad(), alpha));
}
void sub_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const double alpha = ctx.attrs.get<double>("alpha");
  if (ctx.needs_input_grad[0]) grads[0] = reduce_to_input(ctx, 0, ctx.grad());
  if (ctx.needs_input_grad[1]) grads[1] = reduce_to_input(ctx, 1, mul(ctx.grad(), -alpha));
}
void mul_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = reduce_to_input(ctx, 0, mul(ctx.grad(), ctx.input(1)));
  if (ctx.needs_input_grad[1]) grads[1] = reduce_to_input(ctx, 1, mul(ctx.grad(), ctx.input(0)));
}
void div_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& b = ctx.input(1);
  if (ctx.needs_input_grad[0]) grads[0] = reduce_to_input(ctx, 0, div(ctx.grad(), b));
  // d(a/b)/db = -a / b^2, computed as PyTorch's -grad * ((a / b) / b): in the result's dtype and
  // without b^2, which overflows a float16 b past 256 (the gradient became -0) and is rounded in
  // b's dtype when a is wider.
  if (ctx.needs_input_grad[1]) grads[1] = reduce_to_input(ctx, 1, neg(mul(ctx.grad(), div(div(ctx.input(0), b), b))));
}
void add_scalar_backward(const BackwardContext& ctx, std::span<Tensor> grads) { grads[0] = ctx.grad(); }
void mul_scalar_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), ctx.attrs.get<double>("value"));
}

OpDef inplace(OpDef def) {
  def.kind = OpKind::InPlace;
  def.infer = nullptr;
  return def;
}

void register_arithmetic_ops(OpRegistry& registry) {
  registry.add(pointwise_op("add", "add(Tensor a, Tensor b, float alpha=1) -> Tensor", add_shape,
                            add_kernel, add_backward, 0, 0, "ember::fn::Add"));
  registry.add(pointwise_op("sub", "sub(Tensor a, Tensor b, float alpha=1) -> Tensor", sub_shape,
                            sub_kernel, sub_backward, 0, 0, "ember::fn::Sub"));
  registry.add(pointwise_op("mul", "mul(Tensor a, Tensor b) -> Tensor", binary_shape, mul_kernel,
                            mul_backward, 0b11, 0, "ember::fn::Mul"));
  registry.add(pointwise_op("div", "div(Tensor a, Tensor b) -> Tensor", binary_float_shape,
                            div_kernel, div_backward, 0b11, 0, "ember::fn::Div"));
  registry.add(pointwise_op("add_scalar", "add_scalar(Tensor a, float value) -> Tensor", scalar_shape,
                            add_scalar_kernel, add_scalar_backward, 0, 0, "ember::fn::AddScalar"));
  registry.add(pointwise_op("mul_scalar", "mul_scalar(Tensor a, float value) -> Tensor", scalar_shape,
                            mul_scalar_kernel, mul_scalar_backward, 0, 0, "ember::fn::MulScalar"));
  registry.add(inplace(pointwise_op("add_", "add_(Tensor(a!) a, Tensor b, float alpha=1) -> Tensor(a!)",
                                    nullptr, add_inplace_kernel, add_backward, 0, 0, "ember::fn::Add")));
  registry.add(inplace(pointwise_op("mul_", "mul_(Tensor(a!) a, Tensor b) -> Tensor(a!)", nullptr,
                                    mul_inplace_kernel, mul_backward, 0b11, 0, "ember::fn::Mul")));
  registry.add(inplace(pointwise_op("mul_scalar_", "mul_scalar_(Tensor(a!) a, float value) -> Tensor(a!)",
                                    nullptr, mul_scalar_inplace_kernel, mul_scalar_backward, 0, 0,
                                    "ember::fn::MulScalar")));
}

const OpRegistration registration(register_arithmetic_ops);

}  // namespace
}  // namespace ember::ops
