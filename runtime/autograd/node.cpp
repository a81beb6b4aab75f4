// OpNode and AccumulateGrad: running a registered backward rule, saving tensors, accumulating.
#include "runtime/autograd/node.h"

#include <utility>

#include "runtime/autograd/checkpoint_frame.h"
#include "runtime/autograd/view_history.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/tensor_alias.h"

namespace ember::autograd {

namespace {
std::atomic<uint64_t> sequence_counter{0};

// A tensor that aliases `tensor` without its autograd history, so a node can keep its own output
// without a reference cycle (output -> grad_fn -> saved output).
Tensor alias_without_history(const Tensor& tensor) {
  return Tensor(alias_impl(*tensor.impl(), /*is_view=*/true));
}

// A saved tensor as a create_graph backward reads it: an alias whose history is `edge`, where its
// gradient went when it was saved (an input's edge, or this node's own output), so the backward
// rule's ops record how the gradients depend on it. No edge (an input that needed no gradient):
// the tensor as saved.
Tensor with_history(const Tensor& saved, const Edge& edge) {
  if (!saved.defined() || !edge.node) return saved;
  Tensor restored = alias_without_history(saved);
  set_history(*restored.impl(), edge.node, edge.input_nr);
  return restored;
}
}  // namespace

Node::Node(int num_outputs)
    : output_hooks(num_outputs), num_outputs_(num_outputs), sequence_nr_(sequence_counter++) {}

namespace {
// The list of the outermost node destructor running on this thread, which the nodes it frees
// hand their next nodes to; null when none runs. A plain pointer: trivially destructible, so a
// node freed while the thread's other thread_locals are destroyed still finds a valid value.
thread_local std::vector<std::shared_ptr<Node>>* nodes_to_free = nullptr;
}  // namespace

Node::~Node() {
  if (nodes_to_free != nullptr) {
    for (Edge& edge : next_edges)
      if (edge.node) nodes_to_free->push_back(std::move(edge.node));
    return;
  }
  std::vector<std::shared_ptr<Node>> pending;
  for (Edge& edge : next_edges)
    if (edge.node) pending.push_back(std::move(edge.node));
  nodes_to_free = &pending;
  while (!pending.empty()) {
    // Dropped outside the vector: its destructor appends to it.
    std::shared_ptr<Node> next = std::move(pending.back());
    pending.pop_back();
    next.reset();
  }
  nodes_to_free = nullptr;
}

uint64_t next_sequence_nr() { return sequence_counter.load(); }

OpNode::OpNode(const OpDef& op, const Attrs& attrs, int num_inputs)
    : Node(op.num_outputs), op_(op), attrs_(attrs), saved_inputs_(num_inputs),
      saved_outputs_(op.num_outputs) {}

void OpNode::save_input(int i, const Tensor& input) {
  // A view keeps its parent alive (view_origin); saving it as itself could close a cycle through
  // the parent's grad_fn.
  const bool alias = input.grad_fn() || input.impl()->view_origin;
  saved_inputs_[i] = saved_for_backward(alias ? alias_without_history(input) : input, input.version());
}

void OpNode::save_output(int i, const Tensor& output) {
  saved_outputs_[i] = saved_for_backward(alias_without_history(output), output.version());
}

SavedTensor saved_for_backward(Tensor tensor, uint64_t version) {
  const ActiveCheckpoint* checkpoint = active_checkpoint();
  if (checkpoint == nullptr) return {std::move(tensor), version};
  if (!checkpoint->recomputing)
    return {.frame = checkpoint->frame, .slot = checkpoint->frame->reserve_slot(tensor, version)};
  // A node of the recomputation: what it saves is the slot's value. It keeps it too, for a backward
  // the function runs inside itself (autograd::grad); the outer backward never runs these nodes,
  // and they go with the recomputation's outputs.
  checkpoint->frame->fill_slot(tensor, version);
  return {std::move(tensor), version};
}

const Tensor& OpNode::unpack(const SavedTensor& saved, const char* role, int index) const {
  // A checkpoint's slot is checked as a kept tensor: the function may have changed it in place after
  // saving it (the recomputation does again what the forward did), and a recomputed input aliases
  // the checkpoint's input, which the caller may change between two backward passes.
  const CheckpointFrame::SlotValue* slot = saved.frame ? &saved.frame->unpack(saved.slot) : nullptr;
  const Tensor& tensor = slot ? slot->tensor : saved.tensor;
  const uint64_t version = slot ? slot->version : saved.version;
  if (tensor.defined() && tensor.version() != version) {
    fail("autograd: a tensor needed to compute gradients was modified by an in-place operation: "
         "{} {} of {} (shape {}) is at version {}, but version {} was saved{}. Use clone() before "
         "modifying it in place",
         role, index, op_.name, tensor.sizes(), tensor.version(), version,
         slot ? " (inside a checkpointed function)" : "");
  }
  return tensor;
}

std::vector<Tensor> Node::apply_with_history(std::vector<Tensor>&& /*grad_outputs*/,
                                             const std::shared_ptr<Node>& /*self*/) {
  fail("autograd: {}'s backward is not differentiable (create_graph=true); compute this gradient with "
       "create_graph=false",
       name());
}

std::vector<Tensor> OpNode::run(std::vector<Tensor>&& grad_outputs, const std::shared_ptr<Node>* self) {
  check(!released_,
        "autograd: trying to backward through the graph a second time (through {}); its saved "
        "tensors were freed after the first backward. Pass retain_graph=true to the first call",
        op_.name);
  const int num_inputs = static_cast<int>(saved_inputs_.size());
  std::vector<Tensor> inputs(num_inputs);
  std::vector<Tensor> outputs(saved_outputs_.size());
  for (int i = 0; i < num_inputs; ++i) inputs[i] = unpack(saved_inputs_[i], "input", i);
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i] = unpack(saved_outputs_[i], "output", static_cast<int>(i));
  if (self != nullptr) {
    for (int i = 0; i < num_inputs; ++i) inputs[i] = with_history(inputs[i], next_edges[i]);
    for (size_t i = 0; i < outputs.size(); ++i)
      outputs[i] = with_history(outputs[i], Edge{*self, static_cast<uint32_t>(i)});
  }

  for (size_t i = 0; i < grad_outputs.size(); ++i) {
    if (!grad_outputs[i].defined()) {
      const TensorMeta& meta = output_metas[i];
      grad_outputs[i] = zeros(meta.sizes, {.dtype = meta.dtype, .device = meta.device});
    }
  }
  std::unique_ptr<bool[]> needs(new bool[num_inputs]);
  for (int i = 0; i < num_inputs; ++i) needs[i] = needs_input_grad[i];
  BackwardContext ctx{attrs_,
                      grad_outputs,
                      inputs,
                      outputs,
                      input_metas,
                      std::span<const bool>(needs.get(), num_inputs)};
  std::vector<Tensor> grad_inputs(num_inputs);
  op_.backward(ctx, grad_inputs);

  for (int i = 0; i < num_inputs; ++i) {
    Tensor& grad = grad_inputs[i];
    if (!needs_input_grad[i] || !grad.defined()) {
      grad = Tensor();
      continue;
    }
    const TensorMeta& meta = input_metas[i];
    internal_assert(grad.sizes() == meta.sizes,
                    "backward rule returned a gradient of the wrong shape");
    if (grad.dtype() != meta.dtype) grad = grad.to(meta.dtype);
  }
  return grad_inputs;
}

void OpNode::release_saved() {
  // A node that saved nothing loses nothing: as in PyTorch, a second backward through it (a sum
  // of a leaf, say) runs and accumulates again.
  for (std::vector<SavedTensor>* list : {&saved_inputs_, &saved_outputs_})
    for (SavedTensor& saved : *list) {
      // A checkpoint's slot is freed in its frame, which other nodes may keep alive.
      if (saved.frame) saved.frame->release_slot(saved.slot);
      const bool held = std::exchange(saved.tensor, Tensor()).defined() || std::exchange(saved.frame, nullptr);
      released_ = held || released_;
    }
}

Tensor run_grad_hook(const GradHook& hook, const Tensor& grad) {
  if (!hook) return grad;  // its slot after remove_hook
  Tensor replaced = hook(grad);
  if (!replaced.defined()) return grad;
  check(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype() && replaced.device() == grad.device(),
        "register_hook: a hook returned a gradient {} {} on {} for a gradient {} {} on {}", replaced.sizes(),
        replaced.dtype(), replaced.device(), grad.sizes(), grad.dtype(), grad.device());
  return replaced;
}

Tensor AccumulateGrad::run_leaf_hooks(Tensor gradient) const {
  AutogradMeta& meta = leaf_->meta();
  // Each hook is copied under the lock and run outside it, as PyTorch runs a leaf's hooks before its
  // AccumulateGrad: a hook may record ops on this leaf (gradient_edge takes the lock) or register
  // another hook on it (which then runs from the next backward on: the count is taken first). Read
  // from the live list, a hook that remove_hook emptied meanwhile, by an earlier hook of this pass,
  // does not run, as libtorch's and as a non-leaf's.
  size_t registered = 0;
  {
    const std::lock_guard lock(meta.mutex);
    registered = meta.hooks.size();
  }
  for (size_t h = 0; h < registered; ++h) {
    GradHook hook;
    {
      const std::lock_guard lock(meta.mutex);
      hook = meta.hooks[h];
    }
    gradient = run_grad_hook(hook, gradient);
  }
  return gradient;
}

std::vector<Tensor> AccumulateGrad::apply_with_history(std::vector<Tensor>&& grad_outputs,
                                                       const std::shared_ptr<Node>& /*self*/) {
  Tensor incoming = std::move(grad_outputs[0]);
  if (!incoming.defined() || !leaf_->requires_grad) return {};
  incoming = run_leaf_hooks(std::move(incoming));
  AutogradMeta& meta = leaf_->meta();
  const std::lock_guard lock(meta.mutex);
  const bool first = !meta.grad || !meta.grad->defined();
  meta.grad = std::make_shared<Tensor>(first ? incoming.clone() : *meta.grad + incoming);
  return {};
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grad_outputs) {
  Tensor incoming = std::move(grad_outputs[0]);
  // A leaf that stopped requiring grad after the graph was built (requires_grad_(false),
  // detach_()) gets nothing, as in PyTorch.
  if (!incoming.defined() || !leaf_->requires_grad) return {};
  incoming = run_leaf_hooks(std::move(incoming));
  AutogradMeta& meta = leaf_->meta();
  const std::lock_guard lock(meta.mutex);
  if (!meta.grad || !meta.grad->defined()) {
    // Steal the gradient when nobody else holds it; otherwise a later in-place accumulation
    // would write into a tensor that another leaf or the user also sees.
    const bool shared = incoming.impl_ptr().use_count() > 1 || incoming.impl()->is_view ||
                        !incoming.is_contiguous();
    Tensor grad = shared ? incoming.clone() : incoming.detach();
    meta.grad = std::make_shared<Tensor>(std::move(grad));
  } else {
    meta.grad->add_(incoming);
  }
  return {};
}

Edge gradient_edge(const Tensor& tensor) {
  TensorImpl& impl = *tensor.impl();
  refresh_view_history(impl);
  if (impl.grad_fn) return {impl.grad_fn, impl.output_nr};
  if (!impl.requires_grad) return {};
  AutogradMeta& meta = impl.meta();
  const std::lock_guard lock(meta.mutex);  // two threads recording with one leaf share one accumulator
  std::shared_ptr<Node> accumulator = meta.grad_accumulator.lock();
  if (!accumulator) {
    accumulator = std::make_shared<AccumulateGrad>(tensor.impl_ptr());
    meta.grad_accumulator = accumulator;
  }
  return {accumulator, 0};
}

}  // namespace ember::autograd
