// CopySlices: the base's history after an in-place update through one of its views.
#include "runtime/autograd/copy_slices.h"

#include <algorithm>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::autograd {

namespace {

// `tensor` seen through the same view ops as the updated view saw its base.
Tensor through_path(Tensor tensor, const std::vector<ViewStep>& path) {
  for (const ViewStep& step : path) {
    const Tensor inputs[] = {tensor};
    tensor = dispatch(OpCall{*step.op, inputs, step.attrs})[0];
  }
  return tensor;
}

// `view` with each expanded dim (size > 1, stride 0) narrowed to one element, through the
// dispatcher (a compile-stage capture records it like the other view ops).
Tensor without_repeated_dims(Tensor view) {
  for (int d = 0; d < view.dim(); ++d)
    if (view.sizes()[d] > 1 && view.strides()[d] == 0) view = view.slice(d, 0, 1);
  return view;
}

}  // namespace

CopySlices::CopySlices(TensorMeta base, std::vector<ViewStep> path, std::shared_ptr<OpNode> fn, int mutated,
                       Edge base_edge)
    : Node(1), base_(std::move(base)), path_(std::move(path)), fn_(std::move(fn)), mutated_(mutated) {
  next_edges = fn_->next_edges;
  next_edges[static_cast<size_t>(mutated_)] = std::move(base_edge);
}

std::vector<Tensor> CopySlices::apply(std::vector<Tensor>&& grad_outputs) {
  return run(std::move(grad_outputs), nullptr);
}

std::vector<Tensor> CopySlices::apply_with_history(std::vector<Tensor>&& grad_outputs,
                                                   const std::shared_ptr<Node>& /*self*/) {
  // The op's node stands for the update's values: its saved output is the view after the write.
  return run(std::move(grad_outputs), &fn_);
}

std::vector<Tensor> CopySlices::run(std::vector<Tensor>&& grad_outputs, const std::shared_ptr<OpNode>* recorded) {
  // The base is contiguous (view_path checks), so the view ops replayed on a contiguous copy of
  // its gradient (clone allocates its output contiguous) select the same elements the update wrote.
  Tensor result = grad_outputs[0].defined()
                      ? grad_outputs[0].clone()
                      : zeros(base_.sizes, {.dtype = base_.dtype, .device = base_.device});
  Tensor region = through_path(result, path_);
  std::vector<Tensor> grads =
      recorded ? fn_->apply_with_history({region.clone()}, *recorded) : fn_->apply({region.clone()});
  // The view's old values reach the output only through the op: their gradient replaces the
  // region's (zero when the op ignores them, as copy_ does). An expanded view (fill_ and zero_
  // write one) reads each old value once per repeat: the sum over the repeats, written once.
  const Tensor& through_op = grads[static_cast<size_t>(mutated_)];
  Tensor written = without_repeated_dims(region);
  if (through_op.defined()) {
    written.copy_(sum_to_size(through_op, written.sizes()));
  } else {
    written.fill_(0.0);
  }
  grads[static_cast<size_t>(mutated_)] = result;
  return grads;
}

ViewPath view_path(const Tensor& view) {
  ViewPath path;
  std::shared_ptr<TensorImpl> impl = view.impl_ptr();
  // Any leaf that requires grad on the way up refuses, not only the root: a parameter that is
  // itself a view of a flat buffer would otherwise take the update without autograd seeing it.
  auto views_trainable_leaf = [](const Tensor& viewed) { return viewed.is_leaf() && viewed.requires_grad(); };
  const char* leaf_reason = "it views a leaf tensor that requires grad; wrap the update in NoGradGuard";
  while (impl->is_view) {
    if (!impl->view_origin) {
      path.why_not = "it was made without grad mode (or is a detach()ed alias), so autograd cannot follow it";
      return path;
    }
    if (const char* function = impl->view_origin->multi_output_function) {
      path.why_not = fmt::format("it is one of several views returned by {}, which may not be modified in place "
                                 "(as in PyTorch; an out-of-place op works)", function);
      return path;
    }
    path.steps.push_back({impl->view_origin->op, impl->view_origin->attrs});
    impl = impl->view_origin->parent;
    if (impl->is_view && views_trainable_leaf(Tensor(impl))) {
      path.why_not = leaf_reason;
      return path;
    }
  }
  std::reverse(path.steps.begin(), path.steps.end());
  path.root = Tensor(impl);
  if (!path.root.is_contiguous()) path.why_not = "the tensor it views is not contiguous";
  if (views_trainable_leaf(path.root)) path.why_not = leaf_reason;
  return path;
}

}  // namespace ember::autograd
