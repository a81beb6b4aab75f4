// CaptureMode: records every dispatched op (forward, autograd backward, optimizer steps) into a
// Graph. It records while running each op eagerly, so autograd, lazily created state and the
// capturing call's own results behave exactly as in eager mode; later calls replay the graph.
#pragma once

#include <span>
#include <string>
#include <unordered_map>

#include "graph/ir.h"

namespace ember::graph {

// Capture met something the graph cannot express (a host read of a graph value, a random op
// dispatched without a per-call refresh of its generator range, a hand-built view).
class GraphBreak : public Error {
 public:
  using Error::Error;
};

// Ops that draw from the host-side generator: its offset advances per call. Called through
// ember's API they come with a refresh that reserves a new range per replay
// (runtime/random/random_attrs.h); without one, a replay would repeat the same numbers.
bool draws_random_numbers(const OpDef& op);

// The .grad tensor of `leaf`, or null when it has none.
const TensorImpl* current_grad(const TensorImpl& leaf);

class CaptureMode final : public DispatchMode {
 public:
  // With fullgraph, a graph break throws GraphBreak; otherwise it is recorded in break_reason()
  // and the capture goes on running eagerly (the caller then discards the graph).
  CaptureMode(Graph& graph, bool fullgraph);

  // A graph input; those added before finish() are the caller's arguments, whose .grad the graph
  // reads and sets as a parameter's (GradLeaf), those after it the backward's seeds.
  ValueId add_input(const Tensor& tensor);
  // Records the outputs, then the write-backs of state changed in the graph and the final .grad
  // of the parameters and arguments. Call after fn returned, outside the mode's guard.
  void finish(std::span<const Tensor> outputs);
  const std::string& break_reason() const { return break_reason_; }
  // The value `tensor` holds in the graph (an alias of one resolves to it); a tensor the graph
  // never saw is lifted as a state input bound by identity.
  ValueId value_for(const Tensor& tensor) { return value_of(tensor); }
  // Records a graph break (fullgraph: throws GraphBreak naming `reason` and the call site).
  void graph_break(const std::string& reason);

  TensorList handle(const OpCall& call, const DispatchNext& next) override;
  void on_host_read(const char* what, const Tensor& tensor) override;
  void on_alias(const Tensor& source, const Tensor& alias) override;
  void on_host_state_change(const std::string& what) override;
  void on_host_guard(const std::string& what, const std::function<bool()>& holds, const void* owner) override;
  void on_host_effect(const std::string& what, const std::function<void()>& replay) override;
  void on_grad_set(const Tensor& leaf) override;
  void on_grad_absent(const Tensor& leaf) override;

  // The .grad tensors lifted as GradInputs, in graph input order (the capture's own call feeds
  // the guards with them).
  const std::vector<Tensor>& grad_input_tensors() const { return grad_input_tensors_; }
  // The host-state guards the captured code asked for (on_host_guard), to check before replays.
  std::vector<HostGuard> take_host_guards() { return std::move(host_guards_); }
  // The arguments that must come without a .grad, as at the capture (an argument's "no .grad on
  // the leaf" guard: another tensor each call, so checked on the call's inputs, not bound here).
  const std::vector<int>& arguments_without_grad() const { return arguments_without_grad_; }

 private:
  struct Binding {
    std::weak_ptr<TensorImpl> impl;  // weak: the capture must not change use counts or lifetimes
    ValueId value = -1;
  };
  // What a buffer held when a value was bound to a tensor viewing it with this geometry.
  struct BufferBinding {
    std::weak_ptr<Storage> storage;
    Dims sizes;
    Dims strides;
    int64_t offset = 0;
    DType dtype = DType::Float32;
    ValueId value = -1;
  };
  void bind(const Tensor& tensor, ValueId value);
  // The value `tensor` currently holds, or -1 when it is not (or no longer) in the graph.
  ValueId find(const Tensor& tensor) const;
  // find(), or the value of the tensor a detach()ed alias came from, or of an alias with the
  // same buffer; else lifts the tensor as a state input bound by identity.
  ValueId value_of(const Tensor& tensor);
  ValueId lift(const Tensor& tensor);  // a new state input, or a leaf's .grad as a GradInput
  ValueId add_grad_input(const Tensor& grad, GradLeaf leaf);
  void make_grad_input(int state, int leaf);
  int argument_index(const TensorImpl& leaf) const;  // -1 when `leaf` is none of the caller's arguments
  // The grad write-back of `leaf` (or none), as finish() decides it for each parameter and argument.
  void record_grad_write_back(const std::shared_ptr<TensorImpl>& leaf, GradLeaf target);
  ValueId pending_alias_value(const Tensor& tensor);  // -1 when `tensor` is no pending alias
  ValueId same_buffer_value(const Tensor& tensor);    // -1 when no value has its buffer and geometry

  Graph& graph_;
  bool fullgraph_;
  std::string break_reason_;
  std::unordered_map<const TensorImpl*, Binding> bindings_;
  // detach()ed aliases of tensors not in the graph yet: the alias's impl -> its source, resolved
  // (the source lifted as state by identity) only if the alias reaches an op.
  struct PendingAlias {
    std::weak_ptr<TensorImpl> alias;
    std::weak_ptr<TensorImpl> source;
  };
  std::unordered_map<const TensorImpl*, PendingAlias> pending_aliases_;
  std::vector<BufferBinding> buffers_;
  // buffers_'s indices per storage address, so a lookup reads one storage's bindings, not all
  // (a dead storage's address may be reused: the binding's weak pointer still decides).
  std::unordered_map<const Storage*, std::vector<size_t>> buffers_by_storage_;
  std::vector<HostGuard> host_guards_;
  // Leaves whose .grad the code set or cleared directly: only those, and leaves whose .grad is a
  // graph value, get a grad write-back (a compiled forward must not clear other .grads).
  std::vector<std::weak_ptr<TensorImpl>> grads_set_;  // in the order the code set them
  std::unordered_map<const TensorImpl*, size_t> grads_set_index_;  // leaf -> its grads_set_ entry
  // Leaves that had no .grad when first seen, the code not having cleared it before: a
  // gradient the graph installs for one is new, where eager would add to a .grad found there.
  std::vector<std::weak_ptr<TensorImpl>> found_without_grad_;
  // For each leaf of found_without_grad_ whose .grad the graph installs: the guard that a
  // replay, like the capture, finds no .grad on it.
  void guard_no_grad_on_entry(const std::shared_ptr<TensorImpl>& leaf);
  // That guard itself, once per leaf (a leaf fn skipped for its missing .grad needs it too).
  void add_no_grad_guard(const std::shared_ptr<TensorImpl>& leaf);
  std::unordered_map<const TensorImpl*, std::weak_ptr<TensorImpl>> no_grad_guarded_;
  std::vector<Tensor> grad_input_tensors_;
  std::vector<std::weak_ptr<TensorImpl>> arguments_;  // the caller's, in order
  std::vector<int> arguments_without_grad_;
  bool finished_ = false;
  bool grad_set_by_code(const TensorImpl& leaf) const;
  // Host effects since the last node with a refresh: the next such node replays them first.
  std::vector<HostEffect> pending_effects_;
  std::vector<int> pending_effect_positions_;  // how many nodes were captured before each
};

}  // namespace ember::graph
