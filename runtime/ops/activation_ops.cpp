// Activations relu, gelu, silu, sigmoid, tanh and their backward ops relu_backward,
// gelu_backward, silu_backward, sigmoid_backward, tanh_backward. Each backward is one registered
// pointwise op with a functor (one pass over memory, fusible by the compile stage) instead of a
// chain of ops; the backward ops are not differentiable themselves. Math: kernels/functors.h.
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

bool tanh_of(const Attrs& attrs) { return attrs.get<bool>("tanh"); }

void relu_shape(const OpCall& call, OutputMetas& outputs) {
  check(call.input(0).dtype() != kBool, "relu: bool tensors are not supported (shape {})",
        call.input(0).sizes());
  unary_shape(call, outputs);
}

void gelu_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_floating(out[0], call.input(0), fn::Gelu{tanh_of(call.attrs)}, call.op.name);
}
void gelu_backward_kernel(const OpCall& call, TensorList& out) {
  cpu::binary_floating(out[0], call.input(0), call.input(1), fn::GeluBackward{tanh_of(call.attrs)},
                       call.op.name);
}

void relu_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("relu_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.output(0)});
}
void gelu_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("gelu_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0)}, Attrs{{"tanh", tanh_of(ctx.attrs)}});
}
void silu_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("silu_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0)});
}
void sigmoid_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("sigmoid_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.output(0)});
}
void tanh_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("tanh_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.output(0)});
}

void register_activation_ops(OpRegistry& registry) {
  registry.add(pointwise_op("relu", "relu(Tensor a) -> Tensor", relu_shape, cpu::unary_numeric_kernel<fn::Relu>,
                            relu_backward, 0, 0b1, "ember::fn::Relu"));
  registry.add(pointwise_op("gelu", "gelu(Tensor a, bool tanh=False) -> Tensor", unary_float_shape,
                            gelu_kernel, gelu_backward, 0b1, 0, "ember::fn::Gelu"));
  registry.add(pointwise_op("silu", "silu(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Silu>, silu_backward, 0b1, 0, "ember::fn::Silu"));
  registry.add(pointwise_op("sigmoid", "sigmoid(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Sigmoid>, sigmoid_backward, 0, 0b1,
                            "ember::fn::Sigmoid"));
  registry.add(pointwise_op("tanh", "tanh(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Tanh>, tanh_backward, 0, 0b1, "ember::fn::Tanh"));

  // (grad, saved) -> grad_input, in the floating dtype of grad and saved.
  registry.add(pointwise_op("relu_backward", "relu_backward(Tensor grad, Tensor output) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::ReluBackward>, nullptr,
                            0, 0, "ember::fn::ReluBackward"));
  registry.add(pointwise_op("gelu_backward", "gelu_backward(Tensor grad, Tensor input, bool tanh=False) -> Tensor",
                            binary_float_shape, gelu_backward_kernel, nullptr, 0, 0,
                            "ember::fn::GeluBackward"));
  registry.add(pointwise_op("silu_backward", "silu_backward(Tensor grad, Tensor input) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::SiluBackward>, nullptr,
                            0, 0, "ember::fn::SiluBackward"));
  registry.add(pointwise_op("sigmoid_backward", "sigmoid_backward(Tensor grad, Tensor output) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::SigmoidBackward>, nullptr,
                            0, 0, "ember::fn::SigmoidBackward"));
  registry.add(pointwise_op("tanh_backward", "tanh_backward(Tensor grad, Tensor output) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::TanhBackward>, nullptr,
                            0, 0, "ember::fn::TanhBackward"));
}

const OpRegistration registration(register_activation_ops);

}  // namespace
}  // namespace ember::ops
