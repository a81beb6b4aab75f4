// The activations hardtanh, hardswish, hardsigmoid, mish and log_sigmoid and their backward ops, as
// PyTorch has kernels for them: one pass over memory each (their composites of registry ops took 5
// to 11 passes), one CUDA kernel each, and fusible by the compile stage. nn/functional_activations_more.h
// calls them. Math: kernels/activation_more_functors.h; hardtanh's forward is fn::Clamp.
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/dispatch.h"
#include "runtime/ops/backward_op_rules.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

// PyTorch's kernels of these activations take floating tensors only (F::hardtanh clamps integers
// itself, as PyTorch's does).
void floating_input_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  check(is_floating(input.dtype()), "{}: expected a floating-point tensor, got {} (shape {})", call.op.name,
        input.dtype(), input.sizes());
  unary_shape(call, outputs);
}

void hardtanh_kernel(const OpCall& call, TensorList& out) {
  const fn::Clamp functor{call.attrs.get<double>("min_val"), call.attrs.get<double>("max_val")};
  cpu::unary_floating(out[0], call.input(0), functor, call.op.name);
}
void hardtanh_backward_kernel(const OpCall& call, TensorList& out) {
  const fn::HardtanhBackward functor{call.attrs.get<double>("min_val"), call.attrs.get<double>("max_val")};
  cpu::binary_floating(out[0], call.input(0), call.input(1), functor, call.op.name);
}

// Each forward saves its input; the backward op reads (grad, input) and the forward's attributes
// (hardtanh's bounds).
template <const char* kBackwardOp>
void backward_through(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op(kBackwardOp);
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0)}, ctx.attrs);
}
constexpr char kHardtanhBackward[] = "hardtanh_backward";
constexpr char kHardswishBackward[] = "hardswish_backward";
constexpr char kHardsigmoidBackward[] = "hardsigmoid_backward";
constexpr char kMishBackward[] = "mish_backward";
constexpr char kLogSigmoidBackward[] = "log_sigmoid_backward";

// A backward op whose saved input carries no gradient: piecewise-linear activations have f'' = 0
// away from their kinks, as PyTorch's derivatives give them zeros.
OpDef with_mask_input(OpDef def) {
  def.nondifferentiable_inputs = 0b10;
  return def;
}

void register_activation_more_ops(OpRegistry& registry) {
  registry.add(pointwise_op("hardtanh", "hardtanh(Tensor a, float min_val=-1.0, float max_val=1.0) -> Tensor",
                            floating_input_shape, hardtanh_kernel, backward_through<kHardtanhBackward>, 0b1, 0,
                            "ember::fn::Clamp"));
  registry.add(pointwise_op("hardswish", "hardswish(Tensor a) -> Tensor", floating_input_shape,
                            cpu::unary_floating_kernel<fn::Hardswish>, backward_through<kHardswishBackward>, 0b1, 0,
                            "ember::fn::Hardswish"));
  registry.add(pointwise_op("hardsigmoid", "hardsigmoid(Tensor a) -> Tensor", floating_input_shape,
                            cpu::unary_floating_kernel<fn::Hardsigmoid>, backward_through<kHardsigmoidBackward>, 0b1, 0,
                            "ember::fn::Hardsigmoid"));
  registry.add(pointwise_op("mish", "mish(Tensor a) -> Tensor", floating_input_shape,
                            cpu::unary_floating_kernel<fn::Mish>, backward_through<kMishBackward>, 0b1, 0,
                            "ember::fn::Mish"));
  registry.add(pointwise_op("log_sigmoid", "log_sigmoid(Tensor a) -> Tensor", floating_input_shape,
                            cpu::unary_floating_kernel<fn::LogSigmoid>, backward_through<kLogSigmoidBackward>, 0b1, 0,
                            "ember::fn::LogSigmoid"));

  // (grad, input) -> grad_input, in the floating dtype of both; each is linear in grad.
  registry.add(with_mask_input(pointwise_op(
      kHardtanhBackward, "hardtanh_backward(Tensor grad, Tensor input, float min_val, float max_val) -> Tensor",
      binary_float_shape, hardtanh_backward_kernel, hardtanh_backward_rule, 0b10, 0, "ember::fn::HardtanhBackward")));
  registry.add(pointwise_op(kHardswishBackward, "hardswish_backward(Tensor grad, Tensor input) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::HardswishBackward>,
                            hardswish_backward_rule, 0b11, 0, "ember::fn::HardswishBackward"));
  registry.add(
      with_mask_input(pointwise_op(kHardsigmoidBackward, "hardsigmoid_backward(Tensor grad, Tensor input) -> Tensor",
                                   binary_float_shape, cpu::binary_floating_kernel<fn::HardsigmoidBackward>,
                                   hardsigmoid_backward_rule, 0b10, 0, "ember::fn::HardsigmoidBackward")));
  registry.add(pointwise_op(kMishBackward, "mish_backward(Tensor grad, Tensor input) -> Tensor", binary_float_shape,
                            cpu::binary_floating_kernel<fn::MishBackward>, mish_backward_rule, 0b11, 0,
                            "ember::fn::MishBackward"));
  registry.add(pointwise_op(kLogSigmoidBackward, "log_sigmoid_backward(Tensor grad, Tensor input) -> Tensor",
                            binary_float_shape, cpu::binary_floating_kernel<fn::LogSigmoidBackward>,
                            log_sigmoid_backward_rule, 0b11, 0, "ember::fn::LogSigmoidBackward"));
}

const OpRegistration registration(register_activation_more_ops);

}  // namespace
}  // namespace ember::ops
