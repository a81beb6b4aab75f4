// cat(tensors...; dim): any number of inputs, promoted to one dtype, whose shapes agree except at
// dim. Its gradient is a slice (a view) of the output gradient per input. stack is unsqueeze + cat
// (runtime/functional.cpp).
#include "kernels/cpu/join_kernels.h"
#include "runtime/functional.h"

namespace ember {

namespace {

void cat_shape(const OpCall& call, OutputMetas& outputs) {
  const std::span<const Tensor> inputs = call.inputs;
  check(!inputs.empty(), "cat: expected a non-empty list of tensors");
  const Tensor* reference = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i].defined(), "cat: tensor {} of the list is undefined", i);
    check(inputs[i].dim() > 0, "cat: tensor {} is zero-dimensional and cannot be concatenated", i);
    if (reference == nullptr && !cpu::cat_skips(inputs[i].sizes())) reference = &inputs[i];
  }
  DType dtype = inputs[0].dtype();
  for (const Tensor& input : inputs) dtype = promote_types(dtype, input.dtype());
  outputs[0].dtype = dtype;
  if (reference == nullptr) {  // every input is 1-D and empty
    (void)wrap_dim(call.attrs.get<int64_t>("dim"), 1, "cat");  // still a dim of a 1-D tensor
    outputs[0].sizes = {0};
    return;
  }
  const int64_t requested = call.attrs.get<int64_t>("dim");
  const int dim = wrap_dim(requested, reference->dim(), "cat");
  Dims sizes = reference->sizes();
  sizes[dim] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    if (cpu::cat_skips(input.sizes())) continue;
    bool matches = input.dim() == reference->dim();
    for (int d = 0; matches && d < input.dim(); ++d) matches = d == dim || input.size(d) == reference->size(d);
    check(matches, "cat: tensor {} has shape {} but tensor {} has shape {}; shapes must match except at dim {}", i,
          input.sizes(), reference - inputs.data(), reference->sizes(), requested);
    // Expanded inputs need no memory, so their sizes can add up past int64; a wrapped sum could
    // even be 0, an empty result.
    check(!__builtin_add_overflow(sizes[dim], input.size(dim), &sizes[dim]),
          "cat: the sizes along dim {} add up to more than an int64 can count (tensor {} of shape {})", requested, i,
          input.sizes());
  }
  outputs[0].sizes = sizes;
}

void cat_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& grad = ctx.grad();
  const std::span<const TensorMeta> metas = ctx.input_metas;
  int rank = 0;
  for (const TensorMeta& meta : metas) {
    if (!cpu::cat_skips(meta.sizes)) {
      rank = meta.sizes.size();
      break;
    }
  }
  const int dim = rank == 0 ? 0 : wrap_dim(ctx.attrs.get<int64_t>("dim"), rank, "cat");
  int64_t start = 0;
  for (size_t i = 0; i < metas.size(); ++i) {
    if (cpu::cat_skips(metas[i].sizes)) {
      if (ctx.needs_input_grad[i]) grads[i] = zeros({0}, {.dtype = grad.dtype(), .device = metas[i].device});
      continue;
    }
    const int64_t length = metas[i].sizes[dim];
    if (ctx.needs_input_grad[i]) grads[i] = slice(grad, dim, start, start + length);
    start += length;
  }
}

void register_join_ops(OpRegistry& registry) {
  registry.add(make_op("cat", "cat(Tensor[] tensors, int dim=0) -> Tensor", OpKind::Other, cat_shape,
                       cpu::cat_kernel, cat_backward));
}

const OpRegistration registration(register_join_ops);

}  // namespace
}  // namespace ember
