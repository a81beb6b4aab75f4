// Losses: cross_entropy (fused log_softmax + nll), nll_loss, mse_loss, and the registered
// backward ops cross_entropy_backward(grad, logits, target) and nll_loss_backward(grad,
// log_probs, target) with the forward's attributes. cross_entropy_with_backward(grad, logits,
// target) returns the loss and the logits' gradient, from one pass on the CPU, where compiled
// steps use it (graph/loss_fusion.cpp); it has no backward rule, so a create_graph backward
// refuses it. The backward ops' own rules (create_graph): loss_backward_rules.cpp. Kernels in
// kernels/cpu/loss_kernels.h.
#include "kernels/cpu/loss_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/backward_op_rules.h"
#include "runtime/ops/registry.h"

namespace ember::ops {

namespace {

int64_t checked_reduction(const OpCall& call) {
  const int64_t reduction = call.attrs.get<int64_t>("reduction");
  check(reduction >= 0 && reduction <= 2, "{}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {}",
        call.op.name, reduction);
  return reduction;
}

// scores [N, C] with target [N], or scores [C] with a 0-d target. Output: per-row losses for
// reduction none, else a scalar.
void class_loss_shape(const OpCall& call, const Tensor& scores, const Tensor& target, const char* op,
                      OutputMetas& outputs) {
  check(is_floating(scores.dtype()), "{}: expected floating-point scores, got {}", op, scores.dtype());
  check(target.dtype() == kInt64, "{}: target must hold int64 class indices, got {} (shape {})", op,
        target.dtype(), target.sizes());
  check(scores.dim() == 1 || scores.dim() == 2, "{}: expected scores of shape [N, C] or [C], got {}", op,
        scores.sizes());
  if (scores.dim() == 2) {
    check(target.dim() == 1 && target.sizes()[0] == scores.sizes()[0],
          "{}: scores have batch size {} but target has shape {} (scores {}, target {})", op, scores.sizes()[0],
          target.sizes(), scores.sizes(), target.sizes());
  } else {
    check(target.dim() == 0, "{}: 1-D scores {} need a 0-d target, got shape {}", op, scores.sizes(),
          target.sizes());
  }
  outputs[0].dtype = scores.dtype();
  outputs[0].sizes = checked_reduction(call) == 0 ? target.sizes() : Dims{};
}

void cross_entropy_shape(const OpCall& call, OutputMetas& outputs) {
  const double smoothing = call.attrs.get<double>("label_smoothing");
  check(smoothing >= 0.0 && smoothing <= 1.0, "cross_entropy: label_smoothing must be in [0, 1], got {}", smoothing);
  class_loss_shape(call, call.input(0), call.input(1), "cross_entropy", outputs);
}

void nll_loss_shape(const OpCall& call, OutputMetas& outputs) {
  class_loss_shape(call, call.input(0), call.input(1), "nll_loss", outputs);
}

// (grad, scores, target): the gradient has the scores' shape.
void class_loss_backward_shape(const OpCall& call, OutputMetas& outputs) {
  OutputMetas forward;
  class_loss_shape(call, call.input(1), call.input(2), call.op.name.c_str(), forward);
  check(call.input(0).sizes() == forward[0].sizes && call.input(0).dtype() == forward[0].dtype,
        "{}: grad ({} {}) must match the loss ({} {})", call.op.name, call.input(0).dtype(), call.input(0).sizes(),
        forward[0].dtype, forward[0].sizes);
  outputs[0].sizes = call.input(1).sizes();
  outputs[0].dtype = call.input(1).dtype();
}

// (grad, logits, target) -> (loss, grad_logits).
void cross_entropy_with_backward_shape(const OpCall& call, OutputMetas& outputs) {
  OutputMetas forward;
  class_loss_shape(call, call.input(1), call.input(2), "cross_entropy_with_backward", forward);
  class_loss_backward_shape(call, outputs);  // outputs[0]: the logits' meta, after checking grad
  outputs[1] = outputs[0];
  outputs[0] = forward[0];
}

void mse_loss_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  const Tensor& target = call.input(1);
  check(input.dtype() == target.dtype() && is_floating(input.dtype()),
        "mse_loss: expected floating-point input and target of one dtype, got {} and {}", input.dtype(),
        target.dtype());
  const Dims shape = broadcast_shapes(input.sizes(), target.sizes(), "mse_loss");
  outputs[0].sizes = checked_reduction(call) == 0 ? shape : Dims{};
  outputs[0].dtype = input.dtype();
}

// ---- backward rules ----

void cross_entropy_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("cross_entropy_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0), ctx.input(1)}, ctx.attrs);
}

void nll_loss_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("nll_loss_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0), ctx.input(1)}, ctx.attrs);
}

// d/d input of mean((input - target)^2) = 2 (input - target) / N; target gets the negation.
void mse_loss_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor difference = sub(ctx.input(0), ctx.input(1));
  const int64_t reduction = ctx.attrs.get<int64_t>("reduction");
  const double factor = reduction == 1 ? 2.0 / static_cast<double>(difference.numel()) : 2.0;
  const Tensor gradient = mul(difference, mul(ctx.grad(), factor));
  if (ctx.needs_input_grad[0]) grads[0] = sum_to_size(gradient, ctx.input_metas[0].sizes);
  if (ctx.needs_input_grad[1]) grads[1] = sum_to_size(mul(gradient, -1.0), ctx.input_metas[1].sizes);
}

OpDef loss_op(const char* name, const char* schema, ShapeRule infer, Kernel kernel, BackwardRule backward,
              uint32_t save_inputs, uint32_t nondifferentiable) {
  OpDef def = make_op(name, schema, OpKind::Other, infer, kernel, backward);
  def.save_inputs = save_inputs;
  def.nondifferentiable_inputs = nondifferentiable;
  return def;
}

void register_loss_ops(OpRegistry& registry) {
  registry.add(loss_op("cross_entropy",
                       "cross_entropy(Tensor logits, Tensor target, int reduction=1, int ignore_index=-100, "
                       "float label_smoothing=0) -> Tensor",
                       cross_entropy_shape, cpu::cross_entropy_kernel, cross_entropy_backward, 0b11, 0b10));
  registry.add(loss_op("cross_entropy_backward",
                       "cross_entropy_backward(Tensor grad, Tensor logits, Tensor target, int reduction, "
                       "int ignore_index, float label_smoothing) -> Tensor",
                       class_loss_backward_shape, cpu::cross_entropy_backward_kernel, cross_entropy_backward_rule,
                       0b111, 0b100));
  OpDef with_backward = loss_op("cross_entropy_with_backward",
                                "cross_entropy_with_backward(Tensor grad, Tensor logits, Tensor target, int reduction, "
                                "int ignore_index, float label_smoothing) -> (Tensor loss, Tensor grad_logits)",
                                cross_entropy_with_backward_shape, cpu::cross_entropy_with_backward_kernel, nullptr, 0,
                                0b100);
  with_backward.num_outputs = 2;
  registry.add(std::move(with_backward));
  registry.add(loss_op("nll_loss",
                       "nll_loss(Tensor log_probs, Tensor target, int reduction=1, int ignore_index=-100) -> Tensor",
                       nll_loss_shape, cpu::nll_loss_kernel, nll_loss_backward, 0b11, 0b10));
  registry.add(loss_op("nll_loss_backward",
                       "nll_loss_backward(Tensor grad, Tensor log_probs, Tensor target, int reduction, "
                       "int ignore_index) -> Tensor",
                       class_loss_backward_shape, cpu::nll_loss_backward_kernel, nll_loss_backward_rule, 0b100,
                       0b100));
  registry.add(loss_op("mse_loss", "mse_loss(Tensor input, Tensor target, int reduction=1) -> Tensor",
                       mse_loss_shape, cpu::mse_loss_kernel, mse_loss_backward, 0b11, 0));
}

const OpRegistration registration(register_loss_ops);

}  // namespace
}  // namespace ember::ops
