// LoweredExecutor's mode="reduce_overhead" path: stable buffers, the step list split into
// captured segments and direct launches, and the replay loop (see cuda_graph_replay.h for why).
#include <fmt/format.h>

#include <vector>

#include "graph/cuda_graph_plan.h"
#include "graph/lowered_executor.h"
#include "graph/pass_util.h"

namespace ember::graph {

std::string cuda_graph_blocker(const Graph& graph, const MemoryPlan& plan) {
  std::vector<bool> updated(graph.values.size(), false);  // by root value
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    // Only the arena device's current stream is redirected into the capture: a kernel on another
    // GPU would run once, at capture, and never in a replay. (Without an arena on a GPU,
    // set_up_cuda_graphs refuses before this matters.)
    for (const std::vector<ValueId>* values : {&node.inputs, &node.outputs})
      for (ValueId value : *values) {
        const Device device = value >= 0 ? graph.values[value].meta.device : plan.arena_device;
        if (device.is_cuda() && plan.arena_device.is_cuda() && device != plan.arena_device)
          return fmt::format("node {} ({}) uses {} besides the graph's {}", n, node.op->name, device, plan.arena_device);
      }
    if (node.op->kind != OpKind::InPlace) continue;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId input = node.inputs[i];
      if (input < 0 || !is_mutated_input(*node.op, i)) continue;
      updated[plan.root[input]] = true;
      const Value& root = graph.values[plan.root[input]];
      if (root.source != ValueSource::GraphInput) continue;
      return fmt::format("node {} ({}) updates graph input {} in place", n, node.op->name, root.index);
    }
  }
  // Inputs are staged into buffers of their own, which undoes an alias the caller made: an input
  // that shares its buffer with state the graph updates would be read stale after the update.
  for (const auto& [first, twin] : graph.shared_buffers) {
    const bool first_is_input = graph.values[first].source == ValueSource::GraphInput;
    const ValueId input = first_is_input ? first : twin;
    const ValueId other = first_is_input ? twin : first;
    if (graph.values[input].source != ValueSource::GraphInput || !updated[plan.root[other]]) continue;
    return fmt::format("graph input {} shares its buffer with state the graph updates in place",
                       graph.values[input].index);
  }
  return "";
}

bool runs_outside_capture(const Graph& graph, const Node& node) {
  if (node.refresh) return true;
  // Host work (a CPU op, a copy to or from the host) is not recorded by a CUDA graph: inside a
  // captured segment it would run at capture and never again, leaving its outputs stale.
  for (ValueId output : node.outputs)
    if (output >= 0 && graph.values[output].meta.device.is_cpu()) return true;
  for (ValueId input : node.inputs)
    if (input >= 0 && graph.values[input].meta.device.is_cpu()) return true;
  return false;
}

void LoweredExecutor::set_up_cuda_graphs(const Graph& graph) {
  if (!plan_.arena_device.is_cuda()) {
    why_no_cuda_graphs_ = fmt::format("the graph's intermediates are on {}, not a CUDA device", plan_.arena_device);
    return;
  }
  if (!CudaGraphReplay::available(&why_no_cuda_graphs_)) return;
  why_no_cuda_graphs_ = cuda_graph_blocker(graph, plan_);
  if (!why_no_cuda_graphs_.empty()) return;
  // Stable addresses: the inputs are staged into buffers owned here, per-call buffers made once.
  for (ValueId id : graph.inputs)
    impls_[id]->storage = Storage::allocate(static_cast<size_t>(aligned_bytes(values_[id].meta)), values_[id].meta.device);
  for (const PerCallBuffer& buffer : per_call_)
    impls_[buffer.root]->storage = Storage::allocate(buffer.bytes, values_[buffer.root].meta.device);
  for (size_t s = 0; s < steps_.size(); ++s) {
    // Consecutive uncaptured steps share a segment, so a run of optimizer steps (refreshed per
    // call) stays one multi-tensor launch (lowered_optimizer_runs.cpp).
    const bool captured = !runs_outside_capture(graph, graph.nodes[steps_[s].node]);
    if (!segments_.empty() && segments_.back().captured == captured) segments_.back().end = s + 1;
    else segments_.push_back({s, s + 1, captured});
  }
  state_places_.assign(graph.state_tensors.size(), StatePlace{});
  replay_ = std::make_unique<CudaGraphReplay>(plan_.arena_device, static_cast<int>(segments_.size()));
}

std::vector<Tensor> LoweredExecutor::run_cuda_graphs(Graph& graph, std::span<const Tensor> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) Tensor(impls_[graph.inputs[i]]).copy_(inputs[i]);
  // Captured kernels hold each state's address and strides: a state re-pointed (a new storage,
  // or set_ to another slice or layout of the same one) means capturing again.
  bool moved = false;
  for (size_t i = 0; i < graph.state_tensors.size(); ++i) {
    const TensorImpl& state = *graph.state_tensors[i];
    StatePlace now{state.storage ? state.storage->data() : nullptr, state.offset, state.strides};
    if (now == state_places_[i]) continue;
    moved = true;
    state_places_[i] = std::move(now);
  }
  if (moved) replay_->invalidate();
  for (size_t k = 0; k < segments_.size(); ++k) {
    const Segment& segment = segments_[k];
    if (!segment.captured) {
      run_steps(graph, segment.begin, segment.end);
      continue;
    }
    // Host work recorded at capture does not replay: the versions of what the segment updates in
    // place are bumped here, once per launch.
    replay_->run(static_cast<int>(k), [&] { run_steps(graph, segment.begin, segment.end, /*bump_versions=*/false); });
    for (size_t s = segment.begin; s < segment.end; ++s)
      if (steps_[s].kind == StepKind::InPlace)
        for (Tensor& output : steps_[s].outputs)
          if (output.defined()) output.impl()->storage->bump_version();
  }
  return finish_call(graph, inputs, /*clone_outputs=*/true);
}

}  // namespace ember::graph
