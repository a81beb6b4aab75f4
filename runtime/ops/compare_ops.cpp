// Comparisons eq, ne, lt, le, gt, ge (bool results, inputs compared in their promoted dtype) and
// where(condition, a, b), which broadcasts all three and promotes a with b. Math:
// kernels/functors.h. Comparisons have no gradient; where routes the gradient by the condition.
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::ops {

namespace {

void where_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& condition = call.input(0);
  const Tensor& a = call.input(1);
  const Tensor& b = call.input(2);
  check(condition.dtype() == kBool, "where: expected a bool condition, got {} (shape {})",
        condition.dtype(), condition.sizes());
  const Dims& c_sizes = condition.sizes();
  const int rank = std::max({c_sizes.size(), a.sizes().size(), b.sizes().size()});
  Dims sizes = Dims::filled(rank, 1);
  for (const Dims* operand : {&c_sizes, &a.sizes(), &b.sizes()}) {
    for (int i = 0; i < operand->size(); ++i) {
      const int64_t size = (*operand)[i];
      int64_t& merged = sizes[rank - operand->size() + i];
      check(size == merged || size == 1 || merged == 1,
            "where: shapes {} (condition), {} and {} cannot be broadcast together", c_sizes,
            a.sizes(), b.sizes());
      if (merged == 1) merged = size;
    }
  }
  outputs[0].sizes = sizes;
  outputs[0].dtype = result_type(a.dtype(), a.dim() == 0, b.dtype(), b.dim() == 0);
}

void where_kernel(const OpCall& call, TensorList& out) {
  cpu::where_cpu(out[0], call.input(0), call.input(1), call.input(2));
}

void where_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& condition = ctx.input(0);
  const Tensor zero = scalar_like(0.0, ctx.grad());
  if (ctx.needs_input_grad[1]) grads[1] = reduce_grad(ctx, 1, where(condition, ctx.grad(), zero));
  if (ctx.needs_input_grad[2]) grads[2] = reduce_grad(ctx, 2, where(condition, zero, ctx.grad()));
}

OpDef comparison(const char* name, const char* schema, Kernel kernel, const char* functor) {
  return pointwise_op(name, schema, compare_shape, kernel, nullptr, 0, 0, functor);
}

void register_compare_ops(OpRegistry& registry) {
  registry.add(comparison("eq", "eq(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::Eq>, "ember::fn::Eq"));
  registry.add(comparison("ne", "ne(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::Ne>, "ember::fn::Ne"));
  registry.add(comparison("lt", "lt(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::Lt>, "ember::fn::Lt"));
  registry.add(comparison("le", "le(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::Le>, "ember::fn::Le"));
  registry.add(comparison("gt", "gt(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::Gt>, "ember::fn::Gt"));
  registry.add(comparison("ge", "ge(Tensor a, Tensor b) -> Tensor", cpu::compare_kernel<fn::Ge>, "ember::fn::Ge"));

  OpDef where_op = pointwise_op("where", "where(Tensor condition, Tensor a, Tensor b) -> Tensor", where_shape,
                                where_kernel, where_backward, 0b1, 0, "ember::fn::Where");
  where_op.nondifferentiable_inputs = 0b1;
  registry.add(std::move(where_op));
}

const OpRegistration registration(register_compare_ops);

}  // namespace
}  // namespace ember::ops
