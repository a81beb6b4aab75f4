// Ordering along one dim: sort(a; dim, descending) and topk(a; k, dim, largest, sorted), each
// -> (values, int64 indices), as torch.sort and torch.topk. Every sort is stable, and NaN counts
// as larger than every number (kernels/sort_order.h). The gradient of the values goes back to the
// elements they came from (a scatter-add of the gradient at the indices into zeros, PyTorch's
// value_selecting_reduction_backward); the indices have none. Kernels in
// kernels/cpu/sort_kernels.h and kernels/cuda/sort.h.
#include "kernels/cpu/sort_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::ops {

namespace {

void set_outputs(const Tensor& input, const Dims& sizes, OutputMetas& outputs) {
  outputs[0].sizes = sizes;
  outputs[0].dtype = input.dtype();
  outputs[1].sizes = sizes;
  outputs[1].dtype = kInt64;
}

// Every dtype, bool included, as PyTorch's sort.
void sort_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);  // a 0-d input takes dim 0 or -1
  set_outputs(input, input.sizes(), outputs);
}

// The result has k elements along dim. A 0-d input is a row of one, so k is 0 or 1, and its result
// is 0-d either way (PyTorch's topk leaves a 0-d shape alone).
void topk_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  const int64_t requested_dim = call.attrs.get<int64_t>("dim");
  const int dim = wrap_dim(requested_dim, input.dim(), "topk");
  check(input.dtype() != kBool,
        "topk: bool tensors are not supported (input shape {}), as PyTorch's topk is not implemented for 'Bool'; "
        "convert with to_dtype first",
        input.sizes());
  const int64_t k = call.attrs.get<int64_t>("k");
  const int64_t length = input.dim() == 0 ? 1 : input.sizes()[dim];
  check(k >= 0 && k <= length,
        "topk: selected index k out of range: k = {}, but dim {} has {} elements (input shape {})", k, requested_dim,
        length, input.sizes());
  Dims sizes = input.sizes();
  if (input.dim() > 0) sizes[dim] = k;
  set_outputs(input, sizes, outputs);
}

// values = input gathered at indices along dim, so d values / d input scatters the gradient back.
// scatter_add, not a scatter: the indices of a row are distinct, so both give the same, and
// scatter_add has a backward rule of its own (a gather) for second derivatives.
void selection_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& scatter_add = lookup_op("scatter_add");
  const TensorMeta& input = ctx.input_metas[0];
  const Tensor grad_input = zeros(input.sizes, {.dtype = ctx.grad(0).dtype(), .device = input.device});
  grads[0] = dispatch_one(scatter_add, {grad_input, ctx.output(1), ctx.grad(0)},
                          {{"dim", ctx.attrs.get<int64_t>("dim")}});
}

OpDef selection(const char* name, const char* schema, ShapeRule infer, Kernel kernel) {
  OpDef def = make_op(name, schema, OpKind::Other, infer, kernel, selection_backward);
  def.num_outputs = 2;
  def.save_outputs = 0b10;  // the indices
  return def;
}

void register_sort_ops(OpRegistry& registry) {
  registry.add(selection("sort", "sort(Tensor a, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
                         sort_shape, cpu::sort_kernel));
  registry.add(selection("topk",
                         "topk(Tensor a, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
                         "(Tensor values, Tensor indices)",
                         topk_shape, cpu::topk_kernel));
}

const OpRegistration registration(register_sort_ops);

}  // namespace
}  // namespace ember::ops
