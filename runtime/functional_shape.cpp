// The op functions that index, join, view, copy and update in place.
#include "runtime/dispatch.h"
#include "runtime/embedding_padding.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/view_shape.h"

namespace ember {

// ---- indexing and joining ----
Tensor embedding(const Tensor& weight, const Tensor& indices, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("embedding");
  return dispatch_one(op, {weight, indices});
}
// PyTorch's embedding_backward skips the positions that look up padding_idx. As a composite: those
// output rows are the detached values, so the padding row's gradient gets nothing from them.
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx, Where where) {
  CallSiteScope site(where);
  const Tensor rows = embedding(weight, indices);
  if (!padding_idx) return rows;
  const int64_t padding = wrap_padding_idx("embedding", *padding_idx, weight.sizes()[0]);
  if (!grad_mode_enabled() || !weight.requires_grad()) return rows;
  const Tensor at_padding = eq(indices, ops::scalar_like(static_cast<double>(padding), indices)).unsqueeze(-1);
  return ember::where(at_padding, rows.detach(), rows);
}
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("cat");
  check(!tensors.empty(), "cat: expected a non-empty list of tensors");
  const Attrs attrs{{"dim", dim}};
  return dispatch_one(op, std::span<const Tensor>(tensors), attrs);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, Where where) {
  CallSiteScope site(where);
  check(!tensors.empty(), "stack: expected a non-empty list of tensors");
  const int wrapped = wrap_insert_dim(dim, tensors[0].dim(), "stack");
  std::vector<Tensor> expanded;
  for (const Tensor& tensor : tensors) {
    check(tensor.sizes() == tensors[0].sizes(), "stack: all tensors must have one shape, got {} and {}",
          tensors[0].sizes(), tensor.sizes());
    expanded.push_back(unsqueeze(tensor, wrapped));
  }
  return cat(expanded, wrapped);
}
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("index_select");
  return dispatch_one(op, {a, index}, {{"dim", dim}});
}
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("gather");
  return dispatch_one(op, {a, index}, {{"dim", dim}});
}
Tensor one_hot(const Tensor& index, int64_t num_classes, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("one_hot");
  return dispatch_one(op, {index}, {{"num_classes", num_classes}});
}

// ---- views ----
Tensor view(const Tensor& a, const Dims& shape, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("view");
  return dispatch_one(op, {a}, {{"shape", shape}});
}
Tensor reshape(const Tensor& a, const Dims& shape, Where where) {
  CallSiteScope site(where);
  // Errors name reshape, not its view. A view where strides can express the shape (always for a
  // contiguous input), else a copy, as torch.reshape.
  const Dims sizes = infer_view_shape("reshape", shape, a.numel(), a.sizes());
  const bool views = view_strides(a.sizes(), a.strides(), sizes, "reshape").has_value();
  return views ? view(a, shape) : view(clone(a), shape);
}
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("transpose");
  return dispatch_one(op, {a}, {{"dim0", dim0}, {"dim1", dim1}});
}
Tensor permute(const Tensor& a, const Dims& order, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("permute");
  return dispatch_one(op, {a}, {{"order", order}});
}
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("slice");
  return dispatch_one(op, {a}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}
Tensor expand(const Tensor& a, const Dims& shape, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("expand");
  return dispatch_one(op, {a}, {{"shape", shape}});
}
Tensor squeeze(const Tensor& a, std::optional<int64_t> dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("squeeze");
  Attrs attrs;
  if (dim) attrs.set("dim", *dim);
  return dispatch_one(op, {a}, attrs);
}
Tensor unsqueeze(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("unsqueeze");
  return dispatch_one(op, {a}, {{"dim", dim}});
}
Tensor diagonal(const Tensor& a, int64_t offset, int64_t dim1, int64_t dim2, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("diagonal");
  return dispatch_one(op, {a}, {{"offset", offset}, {"dim1", dim1}, {"dim2", dim2}});
}
Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim, Where where) {
  CallSiteScope site(where);
  // Wrapped first, also for a 0-d tensor (which takes dims 0 and -1), as PyTorch checks them.
  const int first = wrap_dim(start_dim, a.dim(), "flatten");
  const int last = wrap_dim(end_dim, a.dim(), "flatten");
  if (a.dim() == 0) return reshape(a, {1});
  check(first <= last, "flatten: start_dim {} comes after end_dim {}", start_dim, end_dim);
  Dims shape;
  for (int i = 0; i < first; ++i) shape.push_back(a.size(i));
  int64_t merged = 1;
  for (int i = first; i <= last; ++i) merged *= a.size(i);
  shape.push_back(merged);
  for (int i = last + 1; i < a.dim(); ++i) shape.push_back(a.size(i));
  return reshape(a, shape);
}

// ---- copies and conversions ----
Tensor contiguous(const Tensor& a, Where where) { return a.contiguous(where); }
Tensor to_dtype(const Tensor& a, DType dtype, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("to_dtype");
  return dispatch_one(op, {a}, {{"dtype", dtype}});
}
Tensor to_device(const Tensor& a, Device device, bool non_blocking, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("to_device");
  return dispatch_one(op, {a}, {{"device", device}, {"non_blocking", non_blocking}});
}

// ---- in place ----
namespace {
Tensor& call_inplace(const OpDef& op, Tensor& target, std::initializer_list<Tensor> inputs,
                     const Attrs& attrs) {
  TensorList outputs = dispatch(OpCall{op, std::span<const Tensor>(inputs.begin(), inputs.size()), attrs});
  // The kernel wrote into `target`; autograd may have given it a new grad_fn through `outputs`.
  internal_assert(outputs[0].impl() == target.impl(), "in-place op returned another tensor");
  return target;
}
}  // namespace

Tensor& add_(Tensor& a, const Tensor& b, double alpha, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("add_");
  return call_inplace(op, a, {a, b}, {{"alpha", alpha}});
}
Tensor& mul_(Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("mul_");
  return call_inplace(op, a, {a, b}, {});
}
Tensor& mul_(Tensor& a, double value, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("mul_scalar_");
  return call_inplace(op, a, {a}, {{"value", value}});
}
Tensor& copy_(Tensor& destination, const Tensor& source, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("copy_");
  // Between devices (staging host data into a preallocated device buffer, as PyTorch allows):
  // moved to the destination's device first, a differentiable to(), then copied there.
  if (source.defined() && destination.defined() && source.device() != destination.device())
    return call_inplace(op, destination, {destination, source.to(destination.device())}, {});
  return call_inplace(op, destination, {destination, source}, {});
}
Tensor& fill_(Tensor& a, double value, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("fill_");
  return call_inplace(op, a, {a}, {{"value", value}});
}
Tensor& zero_(Tensor& a, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("zero_");
  return call_inplace(op, a, {a}, {});
}

}  // namespace ember

