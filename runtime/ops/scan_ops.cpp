// Running reductions along one dim: cumsum(a; dim, reverse). `reverse` sums from the end; it is
// the gradient of the forward form (PyTorch's flip(cumsum(flip(grad)))) and not part of the public
// function. Integers and bool sum to int64, floating inputs keep their dtype, as in PyTorch.
// Kernels in kernels/cpu/scan_kernels.h and kernels/cuda/scan.h.
#include "kernels/cpu/scan_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/ops/registry.h"

namespace ember::ops {

namespace {

void cumsum_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = is_floating(input.dtype()) ? input.dtype() : kInt64;
}

// Element i of the input reaches every output at or after i (before it, reversed): the gradient
// is the running sum of the gradient in the other direction.
void cumsum_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("cumsum");
  grads[0] = dispatch_one(op, {ctx.grad()},
                          {{"dim", ctx.attrs.get<int64_t>("dim")}, {"reverse", !ctx.attrs.get<bool>("reverse")}});
}

void register_scan_ops(OpRegistry& registry) {
  registry.add(make_op("cumsum", "cumsum(Tensor a, int dim, bool reverse=False) -> Tensor", OpKind::Other,
                       cumsum_shape, cpu::cumsum_kernel, cumsum_backward));
}

const OpRegistration registration(register_scan_ops);

}  // namespace
}  // namespace ember::ops
