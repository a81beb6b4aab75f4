// softmax and log_softmax (attr dim) and their backward ops softmax_backward(grad, output; dim)
// and log_softmax_backward(grad, output; dim). The forward ops save their output, which is all
// the backward needs; the backward ops' own rules (create_graph) are in loss_backward_rules.cpp.
// Kernels in kernels/cpu/softmax_kernels.h.
#include "kernels/cpu/softmax_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/backward_op_rules.h"
#include "runtime/ops/registry.h"

namespace ember::ops {

namespace {

void softmax_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  check(is_floating(input.dtype()), "{}: expected a floating-point input, got {}", call.op.name, input.dtype());
  wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = input.dtype();
}

void softmax_backward_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& output = call.input(1);
  check(grad.sizes() == output.sizes() && grad.dtype() == output.dtype(),
        "{}: grad ({} {}) must match the forward output ({} {})", call.op.name, grad.dtype(), grad.sizes(),
        output.dtype(), output.sizes());
  softmax_shape(OpCall{call.op, call.inputs.subspan(1), call.attrs}, outputs);
}

void softmax_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("softmax_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.output(0)}, {{"dim", ctx.attrs.get<int64_t>("dim")}});
}

void log_softmax_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("log_softmax_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.output(0)}, {{"dim", ctx.attrs.get<int64_t>("dim")}});
}

OpDef softmax_op(const char* name, const char* schema, ShapeRule infer, Kernel kernel, BackwardRule backward) {
  OpDef def = make_op(name, schema, OpKind::Other, infer, kernel, backward);
  def.save_outputs = 0b1;
  return def;
}

// The backward ops' own backward (create_graph) reads both of their inputs.
OpDef softmax_backward_op(const char* name, const char* schema, Kernel kernel, BackwardRule backward) {
  OpDef def = make_op(name, schema, OpKind::Other, softmax_backward_shape, kernel, backward);
  def.save_inputs = 0b11;
  return def;
}

void register_softmax_ops(OpRegistry& registry) {
  registry.add(softmax_op("softmax", "softmax(Tensor a, int dim) -> Tensor", softmax_shape, cpu::softmax_kernel,
                          softmax_backward));
  registry.add(softmax_op("log_softmax", "log_softmax(Tensor a, int dim) -> Tensor", softmax_shape,
                          cpu::log_softmax_kernel, log_softmax_backward));
  registry.add(softmax_backward_op("softmax_backward",
                                   "softmax_backward(Tensor grad, Tensor output, int dim) -> Tensor",
                                   cpu::softmax_backward_kernel, softmax_backward_rule));
  registry.add(softmax_backward_op("log_softmax_backward",
                                   "log_softmax_backward(Tensor grad, Tensor output, int dim) -> Tensor",
                                   cpu::log_softmax_backward_kernel, log_softmax_backward_rule));
}

const OpRegistration registration(register_softmax_ops);

}  // namespace
}  // namespace ember::ops
