// CaptureMode: the side table from TensorImpl to graph value, functionalized in-place updates and
// the write-backs computed when the capture ends (state lifting and the .grad bookkeeping:
// capture_grads.cpp).
#include "graph/capture.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

#include "graph/compile_log.h"
#include "runtime/autograd/checkpoint_frame.h"
#include "runtime/memory/overlap.h"

namespace ember::graph {

bool draws_random_numbers(const OpDef& op) {
  return op.name == "rand" || op.name == "randn" || op.name == "randint" || op.name == "dropout";
}

CaptureMode::CaptureMode(Graph& graph, bool fullgraph) : graph_(graph), fullgraph_(fullgraph) {
  take_attr_refresh();  // a refresh left over from code run under another mode is not ours
}

ValueId CaptureMode::add_input(const Tensor& tensor) {
  check(tensor.defined(), "compile: graph input {} is an undefined tensor", graph_.inputs.size());
  const ValueId id = graph_.add_input(meta_of(tensor));
  bind(tensor, id);
  if (finished_) return id;
  arguments_.push_back(tensor.impl_ptr());
  const TensorImpl& leaf = *tensor.impl();
  if (leaf.requires_grad && !leaf.grad_fn && current_grad(leaf) == nullptr)
    found_without_grad_.push_back(tensor.impl_ptr());
  return id;
}

void CaptureMode::bind(const Tensor& tensor, ValueId value) {
  const TensorImpl& impl = *tensor.impl();
  bindings_[&impl] = {tensor.impl_ptr(), value};
  if (!impl.storage) return;
  buffers_by_storage_[impl.storage.get()].push_back(buffers_.size());
  buffers_.push_back({impl.storage, impl.sizes, impl.strides, impl.offset, impl.dtype, value});
}

ValueId CaptureMode::find(const Tensor& tensor) const {
  auto found = bindings_.find(tensor.impl());
  if (found == bindings_.end()) return -1;
  // A freed impl whose address was reused is another tensor: the weak pointer tells them apart.
  if (found->second.impl.lock().get() != tensor.impl()) return -1;
  return found->second.value;
}

void CaptureMode::on_alias(const Tensor& source, const Tensor& alias) {
  const ValueId known = find(source);
  if (known >= 0) {
    bind(alias, known);
    return;
  }
  pending_aliases_[alias.impl()] = {alias.impl_ptr(), source.impl_ptr()};
}

ValueId CaptureMode::value_of(const Tensor& tensor) {
  const ValueId known = find(tensor);
  if (known >= 0) return known;
  ValueId value = pending_alias_value(tensor);
  if (value < 0) value = same_buffer_value(tensor);
  if (value < 0) value = lift(tensor);
  bind(tensor, value);
  return value;
}

ValueId CaptureMode::pending_alias_value(const Tensor& tensor) {
  // A detach()ed parameter (say) is the parameter: lifting the alias itself as state would bind a
  // temporary by identity and leave the parameter's own updates and .grad out of the graph.
  auto pending = pending_aliases_.find(tensor.impl());
  if (pending == pending_aliases_.end()) return -1;
  const std::shared_ptr<TensorImpl> alias = pending->second.alias.lock();
  const std::shared_ptr<TensorImpl> source = pending->second.source.lock();
  pending_aliases_.erase(pending);
  if (alias.get() != tensor.impl() || !source) return -1;  // a reused address, or a dead source
  return value_of(Tensor(source));
}

ValueId CaptureMode::same_buffer_value(const Tensor& tensor) {
  // Autograd makes aliases outside the dispatcher (saved tensors without history, a stolen
  // .grad's detach(), the base a CopySlices node saves), often after the original handle died:
  // an alias with the same storage and geometry holds the newest value bound with that geometry.
  // Writes through other views of the storage since then do not change that: the IR keeps views
  // and in-place results as aliases of one buffer, so the value, read where the alias is read,
  // holds what the alias held (eliminate_common_subexpressions keys reads by the writes their
  // buffer had seen). An alias matching no bound geometry (a hand-built view) cannot be bound by
  // identity: at replay it would hold the capture's data.
  const TensorImpl& wanted = *tensor.impl();
  const ByteExtent wanted_bytes = byte_extent(wanted.sizes, wanted.strides, wanted.offset, wanted.dtype);
  ValueId alias = -1;
  ValueId other_view = -1;
  const auto bound_here = buffers_by_storage_.find(wanted.storage.get());
  if (bound_here == buffers_by_storage_.end()) return -1;
  for (const size_t index : bound_here->second) {
    const BufferBinding& buffer = buffers_[index];
    if (buffer.storage.lock() != wanted.storage) continue;  // a dead storage whose address was reused
    // Disjoint parts of one buffer are separate tensors (a compiled replay installs all its
    // gradients as slices of one arena): only a view over the same bytes can alias a value. The
    // same geometry always does, also with no bytes at all (an activation of a batch of 0 rows,
    // saved for backward: lifted as state instead, it failed the next call's guards).
    const bool same_geometry = buffer.sizes == wanted.sizes && buffer.strides == wanted.strides &&
                               buffer.offset == wanted.offset && buffer.dtype == wanted.dtype;
    const ByteExtent buffer_bytes = byte_extent(buffer.sizes, buffer.strides, buffer.offset, buffer.dtype);
    if (!same_geometry && !wanted_bytes.overlaps(buffer_bytes)) continue;
    if (same_geometry) {
      alias = std::max(alias, buffer.value);
    } else if (graph_.values[buffer.value].source == ValueSource::NodeOutput) {
      other_view = std::max(other_view, buffer.value);
    }
  }
  if (alias < 0 && other_view >= 0) {
    const Value& other = graph_.values[other_view];
    graph_break(fmt::format("a tensor of shape {} (strides {}) shares storage with graph value %{} ({} output, "
                            "shape {}) but was made outside the dispatcher",
                            tensor.sizes(), tensor.strides(), other_view, graph_.nodes[other.index].op->name,
                            other.meta.sizes));
  }
  return alias;
}

void CaptureMode::graph_break(const std::string& reason) {
  const std::string where = CallSite::describe();
  if (fullgraph_) {
    log::event("graph_breaks", fmt::format("graph break{}: {} (fullgraph: thrown as GraphBreak)", where, reason),
               {{"reason", reason}, {"call_site", where}, {"fullgraph", true}});
    throw GraphBreak("graph break: " + reason + where);
  }
  if (break_reason_.empty()) break_reason_ = reason + where;
}

TensorList CaptureMode::handle(const OpCall& call, const DispatchNext& next) {
  AttrRefresh refresh = take_attr_refresh();
  // A replay repeats a host effect by calling it again: an op inside it would run twice.
  if (HostEffectScope::active())
    graph_break(fmt::format("{} was dispatched inside a host effect (an LR scheduler's step())", call.op.name));
  if (draws_random_numbers(call.op) && !refresh)
    graph_break(fmt::format("{} draws random numbers but was dispatched without a per-call refresh of its "
                            "generator range (call it through ember's functions, which reserve one)",
                            call.op.name));
  std::vector<ValueId> inputs;
  inputs.reserve(call.inputs.size());
  for (const Tensor& input : call.inputs) inputs.push_back(input.defined() ? value_of(input) : -1);
  TensorList outputs = next.run(call);
  std::vector<TensorMeta> metas;
  for (const Tensor& output : outputs) metas.push_back(output.defined() ? meta_of(output) : TensorMeta{});
  const int index = graph_.add_node(call.op, call.attrs, std::move(inputs), metas);
  Node& node = graph_.nodes[index];
  if (CallSite::known()) node.call_site = CallSite::current();
  node.refresh = std::move(refresh);
  node.captured_at = index;
  const autograd::ActiveCheckpoint* checkpoint = autograd::active_checkpoint();
  node.recomputed = checkpoint != nullptr && checkpoint->recomputing;
  if (node.refresh) {
    node.effects = std::exchange(pending_effects_, {});
    node.effect_positions = std::exchange(pending_effect_positions_, {});
  }
  // In-place outputs are the mutated inputs themselves: rebinding them to the node's new values
  // is the functionalization, later readers see the updated value.
  for (int i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined()) bind(outputs[i], node.outputs[i]);
  return outputs;
}

void CaptureMode::on_host_read(const char* what, const Tensor& tensor) {
  const ValueId id = find(tensor);
  // No op of fn has touched it: a tensor from outside fn (a temperature kept by the caller), whose
  // values may differ at the next call, as a state input's may.
  if (id < 0) {
    graph_break(fmt::format("{}() reads the values of a {} {} tensor made outside the compiled function on the "
                            "host; the value would be baked into the graph",
                            what, tensor.sizes(), tensor.dtype()));
    return;
  }
  const Value& value = graph_.values[id];
  const std::string producer = value.source == ValueSource::NodeOutput
                                   ? graph_.nodes[value.index].op->name
                                   : (value.source == ValueSource::GraphInput ? "a graph input" : "a state input");
  graph_break(fmt::format("{}() reads the values of %{} (from {}) on the host; the value would be baked "
                          "into the graph", what, id, producer));
}

void CaptureMode::on_host_state_change(const std::string& what) {
  graph_break(fmt::format("{} changes host state inside the compiled function, and replaying the graph "
                          "would not change it again; call it between calls (each replay re-reads the "
                          "learning rate), or step an LR scheduler inside instead (a replay repeats its step())",
                          what));
}

void CaptureMode::on_host_effect(const std::string& what, const std::function<void()>& replay) {
  // Only refreshes read host state during a replay (the guards are checked before it starts), so
  // an effect needs replaying in order with the refreshes alone: before the next refreshed node,
  // or after the graph when none follows.
  pending_effects_.push_back({what, replay});
  pending_effect_positions_.push_back(static_cast<int>(graph_.nodes.size()));
}

void CaptureMode::on_host_guard(const std::string& what, const std::function<bool()>& holds, const void* owner) {
  // The same condition on the same object read again (a container indexed once per layer): one
  // guard checks it, and explain() lists it once.
  const auto same = [&](const HostGuard& guard) { return guard.owner == owner && guard.what == what; };
  if (owner != nullptr && std::any_of(host_guards_.begin(), host_guards_.end(), same)) return;
  host_guards_.push_back({what, holds, owner});
}

void CaptureMode::finish(std::span<const Tensor> outputs) {
  graph_.final_effects = std::exchange(pending_effects_, {});
  graph_.final_effect_positions = std::exchange(pending_effect_positions_, {});
  for (size_t i = 0; i < outputs.size(); ++i) {
    check(outputs[i].defined(), "compile: the function returned an undefined tensor (result {} of {})", i,
          outputs.size());
    graph_.outputs.push_back(value_of(outputs[i]));
  }
  // A parameter whose .grad fn cleared but never read (an unused layer's, by zero_grad) is state
  // too: each replay clears its .grad again.
  for (const std::weak_ptr<TensorImpl>& weak : grads_set_)
    if (const std::shared_ptr<TensorImpl> leaf = weak.lock(); leaf && find(Tensor(leaf)) < 0) value_of(Tensor(leaf));
  for (size_t i = 0; i < graph_.state_tensors.size(); ++i) {
    const std::shared_ptr<TensorImpl> impl = graph_.state_tensors[i];  // a copy: add_state may grow the list
    const ValueId current = find(Tensor(impl));
    if (current >= 0 && current != graph_.state_inputs[i])
      graph_.write_backs.push_back({static_cast<int>(i), current});
    record_grad_write_back(impl, {.argument = false, .index = static_cast<int>(i)});
  }
  // An argument's .grad is set as a parameter's: eager backward() inside fn fills it (the input's
  // gradient of a saliency map, a weight passed in and stepped by fn).
  for (size_t a = 0; a < arguments_.size(); ++a)
    if (const std::shared_ptr<TensorImpl> leaf = arguments_[a].lock())
      record_grad_write_back(leaf, {.argument = true, .index = static_cast<int>(a)});
  finished_ = true;
}

}  // namespace ember::graph
