// Scatter-adds, the gradients of the gathers in index_ops.cpp (and differentiable themselves):
//   embedding_backward(grad [*indices, D], indices; num_weights) -> [num_weights, D]
//   index_add(self, index, source; dim)  = self with source's slices added at index along dim
//   scatter_add(self, index, src; dim)   = self with src[p] added at p with p[dim] = index[p]
// index_add and scatter_add follow torch.index_add / torch.scatter_add (out of place).
#include <algorithm>

#include "kernels/cpu/index_kernels.h"
#include "runtime/functional.h"

namespace ember {

namespace {

int wrapped_dim(const OpCall& call, int rank) {
  return rank == 0 ? 0 : wrap_dim(call.attrs.get<int64_t>("dim"), rank, call.op.name);
}

// ---- embedding_backward ----
void embedding_backward_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& indices = call.input(1);
  const int64_t num_weights = call.attrs.get<int64_t>("num_weights");
  check(num_weights >= 0, "embedding_backward: num_weights must be non-negative, got {}", num_weights);
  check(indices.dtype() == kInt64 || indices.dtype() == kInt32,
        "embedding_backward: indices must be int64 or int32, got {}", indices.dtype());
  bool matches = grad.dim() == indices.dim() + 1;
  for (int d = 0; matches && d < indices.dim(); ++d) matches = grad.size(d) == indices.size(d);
  check(matches, "embedding_backward: grad {} must have the indices' shape {} plus one trailing dim",
        grad.sizes(), indices.sizes());
  outputs[0].sizes = {num_weights, grad.size(-1)};
  outputs[0].dtype = grad.dtype();
}

// The gradient of a scatter-add with respect to its source is the matching gather.
void embedding_backward_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = embedding(ctx.grad(), ctx.input(1));
}

// ---- index_add ----
void index_add_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& self = call.input(0);
  const Tensor& index = call.input(1);
  const Tensor& source = call.input(2);
  check(index.dtype() == kInt64 || index.dtype() == kInt32, "index_add: index must be int64 or int32, got {}",
        index.dtype());
  check(index.dim() <= 1, "index_add: index must be 1-D or 0-d, got shape {}", index.sizes());
  check(source.dtype() == self.dtype(), "index_add: source has dtype {} but self has dtype {}", source.dtype(),
        self.dtype());
  const int dim = wrapped_dim(call, self.dim());
  // A 0-d self takes one index and one source element.
  bool matches = self.dim() == 0 ? index.numel() == 1 && source.numel() == 1 && source.dim() <= 1
                                 : source.dim() == self.dim();
  for (int d = 0; matches && d < self.dim(); ++d)
    matches = source.size(d) == (d == dim ? index.numel() : self.size(d));
  check(matches, "index_add: source {} must match self {} except at dim {}, where it must be the index length {}",
        source.sizes(), self.sizes(), dim, index.numel());
  outputs[0].sizes = self.sizes();
  outputs[0].dtype = self.dtype();
}

void index_add_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = ctx.grad();
  if (!ctx.needs_input_grad[2]) return;
  const Tensor selected = index_select(ctx.grad(), ctx.attrs.get<int64_t>("dim"), ctx.input(1));
  const Dims& source_sizes = ctx.input_metas[2].sizes;  // differs only for a 0-d self
  grads[2] = selected.sizes() == source_sizes ? selected : selected.reshape(source_sizes);
}

// ---- scatter_add ----
// As PyTorch's scatter checks (and gather's, whose gradient this is): a 0-d tensor counts as one
// element along dim 0, and an empty index adds nothing and is checked for neither dtype nor shape.
void scatter_add_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& self = call.input(0);
  const Tensor& index = call.input(1);
  const Tensor& source = call.input(2);
  check(source.dtype() == self.dtype(), "scatter_add: src has dtype {} but self has dtype {}", source.dtype(),
        self.dtype());
  const int dim = wrapped_dim(call, self.dim());
  outputs[0].sizes = self.sizes();
  outputs[0].dtype = self.dtype();
  if (index.numel() == 0) return;
  check(index.dtype() == kInt64, "scatter_add: index must be int64, got {}", index.dtype());
  const int rank = std::max(self.dim(), 1);
  check(std::max(index.dim(), 1) == rank && std::max(source.dim(), 1) == rank,
        "scatter_add: self {}, index {} and src {} must have the same number of dims", self.sizes(),
        index.sizes(), source.sizes());
  auto size_or_one = [](const Tensor& tensor, int d) { return tensor.dim() == 0 ? int64_t{1} : tensor.size(d); };
  for (int d = 0; d < rank; ++d) {
    const int64_t index_size = size_or_one(index, d);
    check(index_size <= size_or_one(source, d) && (d == dim || index_size <= size_or_one(self, d)),
          "scatter_add: index {} is larger than src {} or self {} at dim {} (only self's dim {} may be smaller)",
          index.sizes(), source.sizes(), self.sizes(), d, dim);
  }
}

// src only contributes where index reaches; the rest of its gradient is zero.
void scatter_add_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  if (ctx.needs_input_grad[0]) grads[0] = ctx.grad();
  if (!ctx.needs_input_grad[2]) return;
  const Tensor& index = ctx.input(1);
  const Tensor gathered = gather(ctx.grad(), ctx.attrs.get<int64_t>("dim"), index);
  const TensorMeta& meta = ctx.input_metas[2];
  if (meta.sizes == index.sizes()) {
    grads[2] = gathered;
    return;
  }
  Tensor grad_source = zeros(meta.sizes, {.dtype = gathered.dtype(), .device = meta.device});
  Tensor window = grad_source;
  for (int d = 0; d < index.dim(); ++d) window = window.narrow(d, 0, index.size(d));
  window.copy_(gathered);
  grads[2] = grad_source;
}

OpDef make(const char* name, const char* schema, ShapeRule infer, Kernel kernel, BackwardRule backward) {
  OpDef def = make_op(name, schema, OpKind::Other, infer, kernel, backward);
  def.save_inputs = 0b10;  // the index
  def.nondifferentiable_inputs = 0b10;
  return def;
}

void register_scatter_ops(OpRegistry& registry) {
  registry.add(make("embedding_backward", "embedding_backward(Tensor grad, Tensor indices, int num_weights) -> Tensor",
                    embedding_backward_shape, cpu::embedding_backward_kernel, embedding_backward_backward));
  registry.add(make("index_add", "index_add(Tensor self, Tensor index, Tensor source, int dim) -> Tensor",
                    index_add_shape, cpu::index_add_kernel, index_add_backward));
  registry.add(make("scatter_add", "scatter_add(Tensor self, Tensor index, Tensor src, int dim) -> Tensor",
                    scatter_add_shape, cpu::scatter_add_kernel, scatter_add_backward));
}

const OpRegistration registration(register_scatter_ops);

}  // namespace
}  // namespace ember
