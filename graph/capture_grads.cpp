// CaptureMode's .grad bookkeeping: a leaf's .grad read per call (GradInput), the final .grad of
// parameters and arguments (GradWriteBack), and the guards that a leaf has no .grad on entry.
// Also lifting a tensor the graph never saw as state (a .grad may be lifted either way).
#include <fmt/format.h>

#include <algorithm>

#include "graph/capture.h"

namespace ember::graph {

const TensorImpl* current_grad(const TensorImpl& leaf) {
  return leaf.autograd_meta && leaf.autograd_meta->grad && leaf.autograd_meta->grad->defined()
             ? leaf.autograd_meta->grad->impl()
             : nullptr;
}

ValueId CaptureMode::lift(const Tensor& tensor) {
  // A parameter's .grad is read through the parameter at each call (a GradInput), whichever of
  // the two fn reads first: gradients made outside fn are new tensors every call. Not one that fn
  // placed there itself (set_grad): that tensor is bound by identity, as any other.
  // An argument's .grad likewise, through the argument (a persistent input that accumulates).
  const auto read_per_call = [&](const TensorImpl& leaf) { return !grad_set_by_code(leaf); };
  for (size_t s = 0; s < graph_.state_tensors.size(); ++s)
    if (current_grad(*graph_.state_tensors[s]) == tensor.impl() && read_per_call(*graph_.state_tensors[s]))
      return add_grad_input(tensor, {.argument = false, .index = static_cast<int>(s)});
  for (size_t a = 0; a < arguments_.size(); ++a)
    if (const std::shared_ptr<TensorImpl> leaf = arguments_[a].lock();
        leaf && current_grad(*leaf) == tensor.impl() && read_per_call(*leaf))
      return add_grad_input(tensor, {.argument = true, .index = static_cast<int>(a)});
  const ValueId value = graph_.add_state(tensor.impl_ptr());
  const TensorImpl& leaf = *tensor.impl();
  if (leaf.requires_grad && !leaf.grad_fn && current_grad(leaf) == nullptr && !grad_set_by_code(leaf))
    found_without_grad_.push_back(tensor.impl_ptr());
  if (const TensorImpl* grad = current_grad(*tensor.impl()); grad != nullptr && read_per_call(*tensor.impl()))
    for (size_t s = 0; s + 1 < graph_.state_tensors.size(); ++s)
      if (graph_.state_tensors[s].get() == grad) {
        make_grad_input(static_cast<int>(s), static_cast<int>(graph_.state_tensors.size()) - 1);
        break;
      }
  return value;
}

ValueId CaptureMode::add_grad_input(const Tensor& grad, GradLeaf leaf) {
  const ValueId input = graph_.add_input(meta_of(grad));
  graph_.grad_inputs.push_back({static_cast<int>(graph_.inputs.size()) - 1, leaf});
  grad_input_tensors_.push_back(grad);
  return input;
}

int CaptureMode::argument_index(const TensorImpl& leaf) const {
  for (size_t a = 0; a < arguments_.size(); ++a)
    if (arguments_[a].lock().get() == &leaf) return static_cast<int>(a);
  return -1;
}

void CaptureMode::make_grad_input(int state, int leaf) {
  // The .grad was read (lifted as state `state`) before its parameter: the same value becomes
  // the next graph input, and the later states move down by one.
  const ValueId value = graph_.state_inputs[state];
  grad_input_tensors_.push_back(Tensor(graph_.state_tensors[state]));
  graph_.state_inputs.erase(graph_.state_inputs.begin() + state);
  graph_.state_tensors.erase(graph_.state_tensors.begin() + state);
  for (ValueId later : graph_.state_inputs)
    if (graph_.values[later].index > state) --graph_.values[later].index;
  for (GradInput& grad : graph_.grad_inputs)
    if (!grad.leaf.argument && grad.leaf.index > state) --grad.leaf.index;
  graph_.values[value].source = ValueSource::GraphInput;
  graph_.values[value].index = static_cast<int>(graph_.inputs.size());
  graph_.inputs.push_back(value);
  const GradLeaf parameter{.argument = false, .index = leaf > state ? leaf - 1 : leaf};
  graph_.grad_inputs.push_back({graph_.values[value].index, parameter});
}

void CaptureMode::record_grad_write_back(const std::shared_ptr<TensorImpl>& leaf, GradLeaf target) {
  if (!leaf->requires_grad || leaf->grad_fn) return;  // only leaves own a .grad
  const bool set_by_code = grad_set_by_code(*leaf);
  if (current_grad(*leaf) == nullptr) {
    // Cleared by the code (zero_grad): cleared by every replay. Never touched: left alone.
    if (set_by_code) graph_.grad_write_backs.push_back({target, -1});
    return;
  }
  const Tensor grad_tensor = *leaf->autograd_meta->grad;
  ValueId grad = find(grad_tensor);
  // Set by the code to a tensor made outside the graph: each replay sets that same tensor
  // (bound by identity, not read per call as the leaf's .grad).
  if (grad < 0 && set_by_code) {
    grad = graph_.add_state(grad_tensor.impl_ptr());
    bind(grad_tensor, grad);
  }
  // A .grad the graph never touched, or one that is itself a state input (bound by identity,
  // its updates are write-backs), needs no grad write-back unless the code set it.
  if (grad >= 0 && (set_by_code || graph_.values[grad].source != ValueSource::StateInput)) {
    graph_.grad_write_backs.push_back({target, grad});
    // An argument was seen on entry, before fn ran: if fn set or cleared its .grad itself (a
    // zero_grad before backward), the .grad it came with is never read.
    if (!(target.argument && set_by_code)) guard_no_grad_on_entry(leaf);
  }
}

void CaptureMode::guard_no_grad_on_entry(const std::shared_ptr<TensorImpl>& leaf) {
  const bool found_without = std::any_of(found_without_grad_.begin(), found_without_grad_.end(),
                                         [&](const std::weak_ptr<TensorImpl>& weak) { return weak.lock() == leaf; });
  // The graph's gradient is the whole .grad: a call that finds one there must add to it, which
  // this graph does not (a capture for that case reads it as a GradInput).
  if (found_without) add_no_grad_guard(leaf);
}

void CaptureMode::on_grad_absent(const Tensor& leaf) {
  // Cleared by fn itself (zero_grad): every replay clears it again, so the skip always holds.
  // Otherwise it was unset when fn began, and a call that finds a .grad there must step (or
  // clip) it as eager would: the capture for that call reads it as a GradInput. PyTorch's
  // compile guards `p.grad is None` the same way.
  if (!grad_set_by_code(*leaf.impl())) add_no_grad_guard(leaf.impl_ptr());
}

void CaptureMode::add_no_grad_guard(const std::shared_ptr<TensorImpl>& leaf) {
  // An argument is another tensor at each call: its guard reads the call's input.
  if (const int argument = argument_index(*leaf); argument >= 0) {
    if (std::find(arguments_without_grad_.begin(), arguments_without_grad_.end(), argument) ==
        arguments_without_grad_.end())
      arguments_without_grad_.push_back(argument);
    return;
  }
  const auto [entry, added] = no_grad_guarded_.try_emplace(leaf.get(), leaf);
  if (!added && entry->second.lock() == leaf) return;
  entry->second = leaf;  // new, or the address of a dead leaf reused
  host_guards_.push_back(
      {fmt::format("no .grad on the leaf of shape {} when called", leaf->sizes),
       [weak = std::weak_ptr<TensorImpl>(leaf)] {
         const std::shared_ptr<TensorImpl> alive = weak.lock();
         return alive && current_grad(*alive) == nullptr;
       }});
}

void CaptureMode::on_grad_set(const Tensor& leaf) {
  if (grad_set_by_code(*leaf.impl())) return;
  grads_set_index_[leaf.impl()] = grads_set_.size();  // the newest leaf at this address
  grads_set_.push_back(leaf.impl_ptr());
}

bool CaptureMode::grad_set_by_code(const TensorImpl& leaf) const {
  const auto found = grads_set_index_.find(&leaf);
  return found != grads_set_index_.end() && grads_set_[found->second].lock().get() == &leaf;
}

}  // namespace ember::graph
