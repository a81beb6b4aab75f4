// Activations relu, gelu, silu, sigmoid, tanh, leaky_relu, elu, softplus and their backward ops
// (relu_backward, gelu_backward, ..., softplus_backward). Each backward is one registered
// pointwise op with a functor (one pass over memory, fusible by the compile stage) instead of a
// chain of ops; their own backward rules (for create_graph) are in activation_backward_rules.cpp.
// Math: kernels/functors.h.
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/backward_op_rules.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

bool tanh_of(const Attrs& attrs) { return attrs.get<bool>("tanh"); }

void relu_shape(const OpCall& call, OutputMetas& outputs) {
  check(call.input(0).dtype() != kBool, "relu: bool tensors are not supported (shape {})",
        call.input(0).sizes());
  unary_shape(call, outputs);
}

// gelu, silu, leaky_relu, elu and softplus take floating tensors only, as PyTorch's kernels do:
// an integer or bool tensor is an error there, not turned into float32 as exp or sigmoid turn it.
void floating_activation_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  check(is_floating(input.dtype()), "{}: expected a floating-point tensor, got {} (shape {})", call.op.name,
        input.dtype(), input.sizes());
  unary_shape(call, outputs);
}

// One loop per formula: a per-element select on the attribute would keep the loop scalar.
void gelu_kernel(const OpCall& call, TensorList& out) {
  if (tanh_of(call.attrs)) {
    cpu::unary_floating(out[0], call.input(0), fn::GeluTanh{}, call.op.name);
  } else {
    cpu::unary_floating(out[0], call.input(0), fn::GeluErf{}, call.op.name);
  }
}
void gelu_backward_kernel(const OpCall& call, TensorList& out) {
  if (tanh_of(call.attrs)) {
    cpu::binary_floating(out[0], call.input(0), call.input(1), fn::GeluTanhBackward{}, call.op.name);
  } else {
    cpu::binary_floating(out[0], call.input(0), call.input(1), fn::GeluErfBackward{}, call.op.name);
  }
}

// The parametrized activations' attributes, read for the forward and backward kernels alike
// (graph/fusion_ops.cpp and runtime/cuda/pointwise_cuda_ops.cpp build the same functors).
double negative_slope_of(const Attrs& attrs) { return attrs.get<double>("negative_slope"); }
double alpha_of(const Attrs& attrs) { return attrs.get<double>("alpha"); }
double beta_of(const Attrs& attrs) { return attrs.get<double>("beta"); }
double threshold_of(const Attrs& attrs) { return attrs.get<double>("threshold"); }

void leaky_relu_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_floating(out[0], call.input(0), fn::LeakyRelu{negative_slope_of(call.attrs)}, call.op.name);
}
void elu_kernel(const OpCall& call, TensorList& out) {
  cpu::unary_floating(out[0], call.input(0), fn::Elu{alpha_of(call.attrs)}, call.op.name);
}
void softplus_kernel(const OpCall& call, TensorList& out) {
  const fn::Softplus functor{beta_of(call.attrs), threshold_of(call.attrs)};
  cpu::unary_floating(out[0], call.input(0), functor, call.op.name);
}
void leaky_relu_backward_kernel(const OpCall& call, TensorList& out) {
  const fn::LeakyReluBackward functor{negative_slope_of(call.attrs)};
  cpu::binary_floating(out[0], call.input(0), call.input(1), functor, call.op.name);
}
void elu_backward_kernel(const OpCall& call, TensorList& out) {
  cpu::binary_floating(out[0], call.input(0), call.input(1), fn::EluBackward{alpha_of(call.attrs)}, call.op.name);
}
void softplus_backward_kernel(const OpCall& call, TensorList& out) {
  const fn::SoftplusBackward functor{beta_of(call.attrs), threshold_of(call.attrs)};
  cpu::binary_floating(out[0], call.input(0), call.input(1), functor, call.op.name);
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
// The parametrized activations save their input, as PyTorch's out-of-place ones do: their
// derivatives are stated in x (x > 0 for leaky_relu, e^x for elu, sigmoid(beta x) for softplus).
void leaky_relu_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("leaky_relu_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0)}, Attrs{{"negative_slope", negative_slope_of(ctx.attrs)}});
}
void elu_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("elu_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0)}, Attrs{{"alpha", alpha_of(ctx.attrs)}});
}
void softplus_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("softplus_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0)},
                          Attrs{{"beta", beta_of(ctx.attrs)}, {"threshold", threshold_of(ctx.attrs)}});
}

void register_activation_ops(OpRegistry& registry) {
  registry.add(pointwise_op("relu", "relu(Tensor a) -> Tensor", relu_shape, cpu::unary_numeric_kernel<fn::Relu>,
                            relu_backward, 0, 0b1, "ember::fn::Relu"));
  registry.add(pointwise_op("gelu", "gelu(Tensor a, bool tanh=False) -> Tensor", floating_activation_shape,
                            gelu_kernel, gelu_backward, 0b1, 0, "ember::fn::Gelu"));
  registry.add(pointwise_op("silu", "silu(Tensor a) -> Tensor", floating_activation_shape,
                            cpu::unary_floating_kernel<fn::Silu>, silu_backward, 0b1, 0, "ember::fn::Silu"));
  registry.add(pointwise_op("sigmoid", "sigmoid(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Sigmoid>, sigmoid_backward, 0, 0b1,
                            "ember::fn::Sigmoid"));
  registry.add(pointwise_op("tanh", "tanh(Tensor a) -> Tensor", unary_float_shape,
                            cpu::unary_floating_kernel<fn::Tanh>, tanh_backward, 0, 0b1, "ember::fn::Tanh"));
  registry.add(pointwise_op("leaky_relu", "leaky_relu(Tensor a, float negative_slope=0.01) -> Tensor",
                            floating_activation_shape, leaky_relu_kernel, leaky_relu_backward, 0b1, 0,
                            "ember::fn::LeakyRelu"));
  registry.add(pointwise_op("elu", "elu(Tensor a, float alpha=1.0) -> Tensor", floating_activation_shape, elu_kernel,
                            elu_backward, 0b1, 0, "ember::fn::Elu"));
  registry.add(pointwise_op("softplus", "softplus(Tensor a, float beta=1.0, float threshold=20.0) -> Tensor",
                            floating_activation_shape, softplus_kernel, softplus_backward, 0b1, 0,
                            "ember::fn::Softplus"));

  // (grad, saved) -> grad_input, in the floating dtype of grad and saved. They save what their
  // own backward reads; only a create_graph backward records them, so a plain one saves nothing.
  OpDef relu_grad = pointwise_op("relu_backward", "relu_backward(Tensor grad, Tensor output) -> Tensor",
                                 binary_float_shape, cpu::binary_floating_kernel<fn::ReluBackward>,
                                 relu_backward_rule, 0b10, 0, "ember::fn::ReluBackward");
  relu_grad.nondifferentiable_inputs = 0b10;  // a mask: zero derivative away from the kink
  registry.add(std::move(relu_grad));
  registry.add(pointwise_op("gelu_backward", "gelu_backward(Tensor grad, Tensor input, bool tanh=False) -> Tensor",
                            binary_float_shape, gelu_backward_kernel, gelu_backward_rule, 0b11, 0,
                            "ember::fn::GeluBackward"));
  registry.add(pointwise_op("silu_backward", "silu_backward(Tensor grad, Tensor input) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::SiluBackward>, silu_backward_rule,
                            0b11, 0, "ember::fn::SiluBackward"));
  registry.add(pointwise_op("sigmoid_backward", "sigmoid_backward(Tensor grad, Tensor output) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::SigmoidBackward>,
                            sigmoid_backward_rule, 0b11, 0, "ember::fn::SigmoidBackward"));
  registry.add(pointwise_op("tanh_backward", "tanh_backward(Tensor grad, Tensor output) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::TanhBackward>, tanh_backward_rule,
                            0b11, 0, "ember::fn::TanhBackward"));
  OpDef leaky_grad = pointwise_op("leaky_relu_backward",
                                  "leaky_relu_backward(Tensor grad, Tensor input, float negative_slope) -> Tensor",
                                  binary_float_shape, leaky_relu_backward_kernel, leaky_relu_backward_rule, 0b10, 0,
                                  "ember::fn::LeakyReluBackward");
  leaky_grad.nondifferentiable_inputs = 0b10;
  registry.add(std::move(leaky_grad));
  registry.add(pointwise_op("elu_backward", "elu_backward(Tensor grad, Tensor input, float alpha) -> Tensor",
                            binary_float_shape, elu_backward_kernel, elu_backward_rule, 0b11, 0,
                            "ember::fn::EluBackward"));
  registry.add(pointwise_op("softplus_backward",
                            "softplus_backward(Tensor grad, Tensor input, float beta, float threshold) -> Tensor",
                            binary_float_shape, softplus_backward_kernel, softplus_backward_rule, 0b11, 0,
                            "ember::fn::SoftplusBackward"));
}

const OpRegistration registration(register_activation_ops);

}  // namespace
}  // namespace ember::ops
