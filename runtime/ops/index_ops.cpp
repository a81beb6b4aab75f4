// Gathers: embedding, index_select, gather, one_hot. Their gradients are the scatter-add ops of
// scatter_ops.cpp (embedding_backward, index_add, scatter_add). Kernels: kernels/cpu/index_kernels.
#include <algorithm>
#include <limits>

#include "kernels/cpu/index_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember {

namespace {

// A registry op called from a backward rule (these scatter ops have no public wrapper).
Tensor call_op(const char* name, std::initializer_list<Tensor> inputs, const Attrs& attrs) {
  return dispatch_one(lookup_op(name), inputs, attrs);
}

Tensor zeros_for(const TensorMeta& meta, const Tensor& grad) {
  return zeros(meta.sizes, {.dtype = grad.dtype(), .device = meta.device});
}

// Index lists for embedding and index_select may be int32 or int64, like PyTorch.
void check_index_list_dtype(const char* op, const Tensor& index) {
  check(index.dtype() == kInt64 || index.dtype() == kInt32, "{}: indices must be int64 or int32, got {} (shape {})",
        op, index.dtype(), index.sizes());
}

// ---- embedding: weight [V, D], indices of any shape -> [*indices, D] ----
void embedding_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& weight = call.input(0);
  const Tensor& indices = call.input(1);
  check(weight.dim() == 2, "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape {}",
        weight.sizes());
  check_index_list_dtype("embedding", indices);
  check_room_for_dim(indices.sizes(), "embedding");
  outputs[0].sizes = indices.sizes();
  outputs[0].sizes.push_back(weight.size(1));
  outputs[0].dtype = weight.dtype();
}

void embedding_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = call_op("embedding_backward", {ctx.grad(), ctx.input(1)},
                     {{"num_weights", ctx.input_metas[0].sizes[0]}});
}

// ---- index_select: a, index (1-D or 0-d); dim -> a with dim resized to index.numel() ----
void index_select_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& index = call.input(1);
  check_index_list_dtype("index_select", index);
  check(index.dim() <= 1, "index_select: index must be 1-D or 0-d, got shape {}", index.sizes());
  outputs[0].sizes = a.sizes();
  outputs[0].dtype = a.dtype();
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), a.dim(), "index_select");  // 0-d: dim 0 or -1
  if (a.dim() == 0) {
    check(index.numel() == 1, "index_select: a 0-d input takes exactly one index, got index of shape {}",
          index.sizes());
    return;
  }
  outputs[0].sizes[dim] = index.numel();
}

void index_select_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = call_op("index_add", {zeros_for(ctx.input_metas[0], ctx.grad()), ctx.input(1), ctx.grad()},
                     {{"dim", ctx.attrs.get<int64_t>("dim")}});
}

// ---- gather: a, index (int64, a's rank); dim -> index's shape ----
// As PyTorch's gather_shape_check, a 0-d tensor counts as one element along dim 0 (a 0-d input
// takes a one-dim index and the reverse), and an empty index is checked for neither its dtype nor
// its shape: it gathers nothing.
void gather_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& index = call.input(1);
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), a.dim(), "gather");  // 0-d: dim 0 or -1
  outputs[0].sizes = index.sizes();
  outputs[0].dtype = a.dtype();
  if (index.numel() == 0) return;
  check(index.dtype() == kInt64, "gather: index must be int64, got {}", index.dtype());
  const int rank = std::max(a.dim(), 1);
  check(std::max(index.dim(), 1) == rank, "gather: index {} must have as many dims as the input {}",
        index.sizes(), a.sizes());
  auto size_or_one = [](const Tensor& tensor, int d) { return tensor.dim() == 0 ? int64_t{1} : tensor.size(d); };
  for (int d = 0; d < rank; ++d)
    check(d == dim || size_or_one(index, d) <= size_or_one(a, d),
          "gather: index {} is larger than the input {} at dim {} (only dim {} may differ)", index.sizes(),
          a.sizes(), d, dim);
}

void gather_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = call_op("scatter_add", {zeros_for(ctx.input_metas[0], ctx.grad()), ctx.input(1), ctx.grad()},
                     {{"dim", ctx.attrs.get<int64_t>("dim")}});
}

// ---- one_hot: index (int64); num_classes (-1: max + 1) -> [*index, num_classes] int64 ----
void one_hot_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& index = call.input(0);
  check(index.dtype() == kInt64, "one_hot: index must be int64, got {}", index.dtype());
  int64_t classes = call.attrs.get<int64_t>("num_classes");
  check(classes >= -1, "one_hot: num_classes must be -1 or non-negative, got {}", classes);
  check_room_for_dim(index.sizes(), "one_hot");
  if (classes == -1) {
    // Inferring the class count reads the indices on the host (for CUDA indices a copy and a
    // sync, as in PyTorch).
    check(index.numel() > 0, "one_hot: cannot infer num_classes from an empty index (shape {})", index.sizes());
    const std::vector<int64_t> values = index.to_vector<int64_t>();
    const int64_t largest = *std::max_element(values.begin(), values.end());
    check(largest >= 0, "one_hot: class indices must be non-negative, got maximum {}", largest);
    check(largest < std::numeric_limits<int64_t>::max(), "one_hot: class index {} is too large to count classes",
          largest);
    classes = largest + 1;
  }
  outputs[0].sizes = index.sizes();
  outputs[0].sizes.push_back(classes);
  outputs[0].dtype = kInt64;
}

OpDef make(const char* name, const char* schema, ShapeRule infer, Kernel kernel, BackwardRule backward) {
  OpDef def = make_op(name, schema, OpKind::Other, infer, kernel, backward);
  if (backward) {
    def.save_inputs = 0b10;  // the index
    def.nondifferentiable_inputs = 0b10;
  }
  return def;
}

void register_index_ops(OpRegistry& registry) {
  registry.add(make("embedding", "embedding(Tensor weight, Tensor indices) -> Tensor", embedding_shape,
                    cpu::embedding_kernel, embedding_backward_rule));
  registry.add(make("index_select", "index_select(Tensor a, Tensor index, int dim) -> Tensor", index_select_shape,
                    cpu::index_select_kernel, index_select_backward));
  registry.add(make("gather", "gather(Tensor a, Tensor index, int dim) -> Tensor", gather_shape, cpu::gather_kernel,
                    gather_backward));
  registry.add(make("one_hot", "one_hot(Tensor index, int num_classes=-1) -> Tensor", one_hot_shape,
                    cpu::one_hot_kernel, nullptr));
}

const OpRegistration registration(register_index_ops);

}  // namespace
}  // namespace ember
