// Shape rules shared by pointwise ops.
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

void binary_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  outputs[0].sizes = broadcast_shapes(a.sizes(), b.sizes(), call.op.name);
  outputs[0].dtype = promote_types(a.dtype(), b.dtype());
}

void compare_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = broadcast_shapes(call.input(0).sizes(), call.input(1).sizes(), call.op.name);
  outputs[0].dtype = kBool;
}

void unary_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = call.input(0).dtype();
}

void unary_float_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = is_floating(call.input(0).dtype()) ? call.input(0).dtype() : kFloat32;
}

void check_inplace_broadcast(const OpCall& call) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  check(broadcast_shapes(a.sizes(), b.sizes(), call.op.name) == a.sizes(),
        "{}: the other tensor of shape {} does not broadcast to the in-place target's shape {}",
        call.op.name, b.sizes(), a.sizes());
}

OpDef pointwise_op(const char* name, const char* schema, ShapeRule infer, Kernel cpu_kernel,
                   BackwardRule backward, uint32_t save_inputs, uint32_t save_outputs,
                   const char* functor) {
  OpDef def;
  def.name = name;
  def.schema = schema;
  def.kind = OpKind::Pointwise;
  def.infer = infer;
  def.kernels[kCpu] = cpu_kernel;
  def.backward = backward;
  def.save_inputs = save_inputs;
  def.save_outputs = save_outputs;
  def.functor = functor;
  return def;
}

}  // namespace ember::ops
