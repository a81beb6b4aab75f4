// In-place ops on the dispatcher's eager path: what may be written, the kernel, version bumps,
// and the history the written tensor (or, through a view, its base) continues with.
#include <bit>

#include "runtime/autograd/copy_slices.h"
#include "runtime/autograd/node.h"
#include "runtime/autograd/view_history.h"
#include "runtime/dispatch.h"
#include "runtime/dispatch_internal.h"
#include "runtime/memory/overlap.h"

namespace ember {

// The tensor an in-place op writes (input `written`) must hold each element once, unless the op
// writes one value everywhere, and no other input may share part of its memory (the same tensor
// is fine): otherwise the result depends on the order the kernel visits elements, which on a GPU
// is none (runtime/memory/overlap.h).
void check_no_overlap(const OpCall& call, size_t written) {
  const Tensor& target = call.inputs[written];
  if (!target.defined()) return;  // an optional state buffer that is absent
  check(call.op.accepts_expanded_target || !has_internal_overlap(target),
        "{}: input {} (shape {}, strides {}) is written in place but several of its elements share one "
        "address (an expanded tensor); clone() it first",
        call.op.name, written, target.sizes(), target.strides());
  for (size_t j = 0; j < call.inputs.size(); ++j) {
    if (j == written || !call.inputs[j].defined()) continue;
    check(memory_overlap(target, call.inputs[j]) != MemoryOverlap::Partial,
          "{}: input {} (shape {}, strides {}) partly overlaps input {} (shape {}, strides {}), which is written "
          "in place; clone() it first",
          call.op.name, j, call.inputs[j].sizes(), call.inputs[j].strides(), written, target.sizes(),
          target.strides());
  }
}

namespace dispatch_detail {

namespace {

void check_inplace_allowed(const OpCall& call, bool recording) {
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!has_bit(call.op.mutated_inputs, i)) continue;
    const Tensor& target = call.inputs[i];
    check_no_overlap(call, i);
    if (!recording || !target.defined()) continue;
    check(!(target.is_leaf() && target.requires_grad()),
          "{}: a leaf tensor that requires grad (shape {}) is used in an in-place operation; "
          "wrap the update in NoGradGuard",
          call.op.name, target.sizes());
  }
}

// The input an in-place op writes, when it is a view and the op writes nothing else: autograd
// then carries the update to the view's base (autograd/copy_slices.h). -1 when no floating input is a view.
int updated_view(const OpCall& call) {
  int found = -1;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!has_bit(call.op.mutated_inputs, i) || !call.inputs[i].defined() || !call.inputs[i].impl()->is_view)
      continue;
    // An integer or bool view has no gradient (as attach_outputs gives such outputs no history):
    // its base must not gain one either.
    if (!is_floating(call.inputs[i].dtype())) continue;
    check(std::popcount(call.op.mutated_inputs) == 1,
          "{}: in-place update of a view (shape {}) by an op that writes several inputs is not supported "
          "while recording gradients", call.op.name, call.inputs[i].sizes());
    found = static_cast<int>(i);
  }
  return found;
}

// The history an in-place update of view `call.inputs[mutated]` gives its root base: a CopySlices
// node over `node`, the op's own node over the view. Built before the kernel runs (it needs the
// base's history from before the update), installed after it succeeded.
std::shared_ptr<autograd::CopySlices> through_view(const std::shared_ptr<autograd::OpNode>& node,
                                                  const OpCall& call, int mutated, Tensor& root_out) {
  const Tensor& view = call.inputs[static_cast<size_t>(mutated)];
  autograd::ViewPath path = autograd::view_path(view);
  check(path.why_not.empty(), "{}: in-place update of a view (shape {}) while recording gradients: {}; use "
        "clone() first", call.op.name, view.sizes(), path.why_not);
  node->output_metas = {{view.sizes(), view.dtype(), view.device()}};
  root_out = path.root;
  const TensorImpl& root = *path.root.impl();
  return std::make_shared<autograd::CopySlices>(TensorMeta{root.sizes, root.dtype, root.device},
                                                std::move(path.steps), node, mutated,
                                                autograd::gradient_edge(path.root));
}

}  // namespace

TensorList run_inplace(const OpCall& call, Kernel kernel) {
  const bool recording = grad_mode_enabled() && call.op.backward && any_input_requires_grad(call);
  check_inplace_allowed(call, recording);
  std::shared_ptr<autograd::OpNode> node = recording ? create_node(call) : nullptr;
  const int view = node ? updated_view(call) : -1;
  Tensor root;
  std::shared_ptr<autograd::CopySlices> slices = view >= 0 ? through_view(node, call, view, root) : nullptr;
  TensorList outputs;
  for (size_t i = 0; i < call.inputs.size(); ++i)
    if (has_bit(call.op.mutated_inputs, i)) outputs.push_back(call.inputs[i]);
  // Refused before the kernel writes anything: a failed call leaves its inputs as they were.
  if (!call.op.backward && autograd::node_creating_graph() != nullptr) [[unlikely]] refuse_constant_use(call, outputs);
  if (!kernels_deferred()) kernel(call, outputs);
  // An optional mutated input (an optimizer's absent state buffer) may be undefined.
  for (Tensor& output : outputs)
    if (output.defined()) output.impl()->storage->bump_version();
  // The written tensor now holds the op's result: its history continues through the new node.
  // Through a view, the base's does; the version bump above makes every view of the base, the
  // updated one included, remake its history from there when next read.
  if (slices) {
    for (int i = 0; i < outputs.size(); ++i)
      if (has_bit(call.op.save_outputs, static_cast<size_t>(i))) node->save_output(i, outputs[i]);
    autograd::set_history(*root.impl(), std::move(slices), 0);
  } else if (node) {
    attach_outputs(node, call, outputs);
  }
  return outputs;
}

}  // namespace dispatch_detail
}  // namespace ember
