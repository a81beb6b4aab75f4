// Tests of values with bool results: isnan, isinf, isfinite, logical_not (one input) and
// logical_and, logical_or, logical_xor (broadcast, compared in the inputs' result_type like eq).
// Every dtype is accepted, as in PyTorch. None has a gradient. Math: kernels/predicate_functors.h.
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

void predicate_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = kBool;
}

OpDef predicate(const char* name, const char* schema, Kernel kernel, const char* functor) {
  return pointwise_op(name, schema, predicate_shape, kernel, nullptr, 0, 0, functor);
}

OpDef logical(const char* name, const char* schema, Kernel kernel, const char* functor) {
  return pointwise_op(name, schema, compare_shape, kernel, nullptr, 0, 0, functor);
}

void register_logical_ops(OpRegistry& registry) {
  registry.add(predicate("isnan", "isnan(Tensor a) -> Tensor", cpu::predicate_kernel<fn::IsNan>, "ember::fn::IsNan"));
  registry.add(predicate("isinf", "isinf(Tensor a) -> Tensor", cpu::predicate_kernel<fn::IsInf>, "ember::fn::IsInf"));
  registry.add(predicate("isfinite", "isfinite(Tensor a) -> Tensor", cpu::predicate_kernel<fn::IsFinite>,
                         "ember::fn::IsFinite"));
  registry.add(predicate("logical_not", "logical_not(Tensor a) -> Tensor", cpu::predicate_kernel<fn::LogicalNot>,
                         "ember::fn::LogicalNot"));
  registry.add(logical("logical_and", "logical_and(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::LogicalAnd>,
                       "ember::fn::LogicalAnd"));
  registry.add(logical("logical_or", "logical_or(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::LogicalOr>,
                       "ember::fn::LogicalOr"));
  registry.add(logical("logical_xor", "logical_xor(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::LogicalXor>,
                       "ember::fn::LogicalXor"));
}

const OpRegistration registration(register_logical_ops);

}  // namespace
}  // namespace ember::ops
