// Capturing the backward of a compiled function's differentiable results, cutting the joint
// graph into forward and backward, and the CompiledBackward node each replay attaches.
#include "graph/compiled_autograd.h"

#include <algorithm>

#include <fmt/format.h>

#include <unordered_set>

#include "runtime/autograd/node.h"
#include "runtime/autograd/view_history.h"
#include "runtime/functional.h"

namespace ember::graph {

namespace {

// Nodes made before fn ran (an input's history) and leaf accumulators are where gradients leave
// the compiled function; every other node reachable from its results was made by fn.
struct Boundaries {
  uint64_t first_node;
  bool operator()(const autograd::Node& node) const {
    return node.sequence_nr() < first_node || dynamic_cast<const autograd::AccumulateGrad*>(&node) != nullptr;
  }
};

enum class History { Usable, Released, Hooked };

// What stands between `root` and the boundaries: freed saved tensors (fn already ran backward
// through them), or hooks the capture would run once with placeholder gradients and a replay
// not at all (register_hook, retain_grad).
History inspect_history(const std::shared_ptr<autograd::Node>& root, const Boundaries& boundary) {
  std::vector<const autograd::Node*> stack{root.get()};
  std::unordered_set<const autograd::Node*> seen{root.get()};
  while (!stack.empty()) {
    const autograd::Node* node = stack.back();
    stack.pop_back();
    if (boundary(*node)) continue;
    if (node->saved_released()) return History::Released;
    for (const std::vector<GradHook>& hooks : node->output_hooks)
      if (std::ranges::any_of(hooks, [](const GradHook& hook) { return hook != nullptr; })) return History::Hooked;
    for (const std::weak_ptr<TensorImpl>& retainer : node->retained_by)
      if (!retainer.expired()) return History::Hooked;
    for (const autograd::Edge& edge : node->next_edges)
      if (edge.node && seen.insert(edge.node.get()).second) stack.push_back(edge.node.get());
  }
  return History::Usable;
}

// fn's argument or state tensor whose gradient edge is (node, output), if any.
std::optional<GradientBoundary> find_boundary(const autograd::Node& node, uint32_t output, const Graph& graph,
                                              const std::vector<Tensor>& inputs, size_t states) {
  const auto matches = [&](const Tensor& tensor) {
    if (!tensor.requires_grad()) return false;
    const autograd::Edge edge = autograd::gradient_edge(tensor);
    return edge.node.get() == &node && edge.input_nr == output;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (matches(inputs[i])) return GradientBoundary{.is_input = true, .index = static_cast<int>(i)};
  for (size_t s = 0; s < states; ++s)
    if (matches(Tensor(graph.state_tensors[s]))) return GradientBoundary{.is_input = false, .index = static_cast<int>(s)};
  return std::nullopt;
}

// Why a gradient flowing into `node`, made before fn ran, reaches no argument and no state tensor:
// fn updated an argument with history in place, which moved the argument's edge onto the update
// (a replay would not), or fn reads a tensor with history that it does not receive.
std::string stray_gradient_reason(const autograd::Node& node, const Tensor& gradient,
                                  const std::vector<Tensor>& inputs, const Boundaries& boundary) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (const std::shared_ptr<autograd::Node>& history = inputs[i].grad_fn(); history && !boundary(*history))
      return fmt::format("a gradient of the compiled function's results flows into {} (shape {}), the history input "
                         "{} had before the function updated it in place ({}): a replay would leave the input's "
                         "history as it was. Update a clone() of the argument, or update it outside the function",
                         node.name(), gradient.sizes(), i, history->name());
  return fmt::format("a gradient of the compiled function's results flows into {} (shape {}), the history of a "
                     "tensor the function neither receives nor reads as state",
                     node.name(), gradient.sizes());
}

// The CompiledBackward node of one replay: the saved values it holds and the backward graph
// they feed.
class CompiledBackward final : public autograd::Node {
 public:
  CompiledBackward(std::shared_ptr<BackwardProgram> program, std::vector<Tensor> saved)
      : Node(static_cast<int>(program->interface.differentiable.size())),
        program_(std::move(program)),
        saved_(std::move(saved)) {
    for (const Tensor& tensor : saved_) saved_versions_.push_back(tensor.version());
    for (const std::shared_ptr<TensorImpl>& state : program_->executor.graph().state_tensors)
      state_versions_.push_back(Tensor(state).version());
  }
  std::string name() const override { return "CompiledBackward"; }

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    check(!released_,
          "autograd: trying to backward through the graph a second time (through a compiled function's results); "
          "its saved tensors were freed after the first backward. Pass retain_graph=true to the first call");
    check_versions();
    std::vector<Tensor> inputs;
    inputs.reserve(grad_outputs.size() + saved_.size());
    for (size_t k = 0; k < grad_outputs.size(); ++k) inputs.push_back(as_expected(std::move(grad_outputs[k]), k));
    inputs.insert(inputs.end(), saved_.begin(), saved_.end());
    const std::lock_guard<std::mutex> one_backward_at_a_time(program_->mutex);
    return program_->executor.run(inputs);
  }
  void release_saved() override {
    saved_.clear();
    released_ = true;
  }
  bool saved_released() const override { return released_; }

 private:
  // The gradient of result k in the type the backward graph was captured for; none: zeros.
  Tensor as_expected(Tensor gradient, size_t k) const {
    const TensorMeta& meta = program_->interface.gradient_metas[k];
    if (!gradient.defined()) return zeros(meta.sizes, {.dtype = meta.dtype, .device = meta.device});
    check(gradient.sizes() == meta.sizes, "compiled backward: the gradient of result {} has shape {}, expected {}",
          program_->interface.differentiable[k], gradient.sizes(), meta.sizes);
    if (gradient.dtype() != meta.dtype || gradient.device() != meta.device)
      gradient = gradient.to(meta.device).to(meta.dtype);
    return gradient;
  }
  // Eager autograd refuses a backward whose saved tensors changed in place since the forward: so
  // does this one, for the saved values (a result sharing a saved value's buffer, modified by the
  // caller) and for the state the backward graph reads directly (a weight).
  void check_versions() const {
    for (size_t i = 0; i < saved_versions_.size(); ++i)
      check(saved_[i].version() == saved_versions_[i],
            "autograd: a tensor the compiled function's backward needs was modified by an in-place operation: "
            "saved value {} (shape {}) is at version {}, the forward saved version {}. Use clone() before "
            "modifying a result in place",
            i, saved_[i].sizes(), saved_[i].version(), saved_versions_[i]);
    const Graph& graph = program_->executor.graph();
    for (size_t s = 0; s < state_versions_.size(); ++s) {
      const Tensor state(graph.state_tensors[s]);
      check(state.version() == state_versions_[s],
            "autograd: a tensor the compiled function's backward reads was modified by an in-place operation "
            "since the forward ran: state %s{} of the backward graph (shape {}) is at version {}, the forward saw "
            "version {}",
            s, state.sizes(), state.version(), state_versions_[s]);
    }
  }

  std::shared_ptr<BackwardProgram> program_;
  std::vector<Tensor> saved_;
  std::vector<uint64_t> saved_versions_;
  std::vector<uint64_t> state_versions_;
  bool released_ = false;
};

// The stand-in for CompiledBackward on an eager call of a compiled function (see
// attach_eager_call_backward): it passes each result's gradient on to the history fn's eager run
// gave it. Named as the replays' node, whose refusal of create_graph (Node::apply_with_history) it
// shares word for word.
class EagerCallBackward final : public autograd::Node {
 public:
  explicit EagerCallBackward(int results) : Node(results) {}
  std::string name() const override { return "CompiledBackward"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override { return std::move(grad_outputs); }
};

// Makes `node` the history of outputs[indices[k]], as its output k. `eager`: the outputs come from
// fn's eager run, and a view among them keeps how it views its base.
void take_history(const std::shared_ptr<autograd::Node>& node, const std::vector<int>& indices,
                  std::vector<Tensor>& outputs, bool eager) {
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor& original = outputs[indices[k]];
    // A handle of its own: the executor (or fn) may return one tensor for two results.
    Tensor result = original.detach();
    TensorImpl& impl = *result.impl();
    impl.grad_fn = node;
    impl.output_nr = static_cast<uint32_t>(k);
    if (eager) {
      // An in-place update of it then reaches its base's history (or is refused on a view of a
      // parameter) as in eager mode, and remakes its own history from the base's, without `node`.
      impl.view_origin = original.impl()->view_origin;
      impl.view_version = autograd::view_version_of(*original.impl());
    } else {
      // A view of an intermediate (fn returned h.view(...)) has a base the caller cannot reach, so
      // an in-place update of it may record on its own history, as on any output. Not when another
      // result shares its memory: that one's history would then miss the update.
      const auto shares_storage = [&](const Tensor& other) {
        return other.defined() && other.impl() != original.impl() && other.impl()->storage == impl.storage;
      };
      if (impl.is_view && std::none_of(outputs.begin(), outputs.end(), shares_storage)) impl.is_view = false;
    }
    outputs[indices[k]] = std::move(result);
  }
}

}  // namespace

bool results_need_backward(const std::vector<Tensor>& results) {
  // Decided on the results, not on the caller's grad mode: fn may enable grad itself (an
  // AutoGradMode inside, called under a NoGradGuard), and its results then have history in eager.
  for (const Tensor& result : results)
    if (result.defined() && result.grad_fn() && !result.grad_fn()->saved_released()) return true;
  return false;
}

std::optional<CapturedBackward> capture_backward(CaptureMode& mode, Graph& graph, const std::vector<Tensor>& inputs,
                                                 const std::vector<Tensor>& results, uint64_t first_node) {
  const Boundaries boundary{first_node};
  CapturedBackward captured;
  for (size_t r = 0; r < results.size(); ++r) {
    const Tensor& result = results[r];
    // A result that is an argument or a state tensor is returned as itself, history included.
    if (!result.grad_fn() || graph.values[graph.outputs[r]].source != ValueSource::NodeOutput) continue;
    switch (inspect_history(result.grad_fn(), boundary)) {
      case History::Released: continue;  // as eager: no second backward through it
      case History::Hooked:
        mode.graph_break(fmt::format("result {} has a gradient hook (register_hook, retain_grad) on its history "
                                     "inside the compiled function",
                                     r));
        return std::nullopt;
      case History::Usable: captured.interface.differentiable.push_back(static_cast<int>(r));
    }
  }
  if (captured.interface.differentiable.empty()) return std::nullopt;

  const size_t values_before = graph.values.size(), nodes_before = graph.nodes.size();
  const size_t inputs_before = graph.inputs.size(), states_before = graph.state_inputs.size();
  std::vector<Tensor> roots, seeds;
  std::vector<ValueId> seed_values;
  for (int r : captured.interface.differentiable) {
    const Tensor& result = results[r];
    roots.push_back(result);
    seeds.push_back(ones(result.sizes(), {.dtype = result.dtype(), .device = result.device()}));
    seed_values.push_back(mode.add_input(seeds.back()));
    captured.interface.gradient_metas.push_back(meta_of(result));
  }
  std::vector<ValueId> arrivals;
  {
    DispatchModeGuard installed(mode);
    autograd::run_backward_until(roots, seeds, boundary,
                                 [&](const autograd::Node& node, uint32_t output, const Tensor& gradient) {
                                   const auto found = find_boundary(node, output, graph, inputs, states_before);
                                   if (!found) {
                                     mode.graph_break(stray_gradient_reason(node, gradient, inputs, boundary));
                                     return;
                                   }
                                   captured.interface.boundaries.push_back(*found);
                                   arrivals.push_back(mode.value_for(gradient));
                                 });
  }
  if (!mode.break_reason().empty()) return std::nullopt;
  // A checkpoint recomputed in this backward redraws its forward's random numbers from the
  // generator state the forward started from; a backward graph replayed apart from its forward
  // (after other calls, or twice for one) cannot know which call's that was.
  for (size_t n = nodes_before; n < graph.nodes.size(); ++n)
    if (graph.nodes[n].refresh) {
      mode.graph_break(fmt::format("the backward of the compiled function's results recomputes a checkpoint that "
                                   "draws random numbers ({}); compile the whole training step (forward, "
                                   "backward and optimizer) instead, or checkpoint outside the compiled function",
                                   graph.nodes[n].op->name));
      return std::nullopt;
    }

  // The backward graph: its inputs are the seeds, then the forward values it reads (saved), in
  // the order it first reads them; state the forward does not update stays state, bound by identity.
  std::unordered_set<int> written;
  for (const WriteBack& write : graph.write_backs) written.insert(write.state);
  Graph& backward = captured.graph;
  std::vector<ValueId> remap(graph.values.size(), -1);
  for (ValueId seed : seed_values) remap[seed] = backward.add_input(graph.values[seed].meta);
  std::vector<ValueId> saved;
  const auto classify = [&](ValueId v) {
    if (v < 0 || remap[v] != -1) return;
    const Value& value = graph.values[v];
    if (value.source == ValueSource::StateInput && !written.contains(value.index)) {
      remap[v] = backward.add_state(graph.state_tensors[value.index]);
    } else if (static_cast<size_t>(v) < values_before) {
      if (value.source == ValueSource::StateInput)
        mode.graph_break(fmt::format("the backward of the compiled function's results reads state %s{} (shape {}) "
                                     "from before the forward updated it in place", value.index, value.meta.sizes));
      saved.push_back(v);
      remap[v] = -2;  // numbered below, once every saved value is known
    }
  };
  for (size_t n = nodes_before; n < graph.nodes.size(); ++n)
    for (ValueId v : graph.nodes[n].inputs) classify(v);
  for (ValueId v : arrivals) classify(v);
  if (!mode.break_reason().empty()) return std::nullopt;
  for (ValueId v : saved) remap[v] = backward.add_input(graph.values[v].meta);
  for (size_t n = nodes_before; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    internal_assert(!node.refresh && node.effects.empty(), "capture_backward: a backward node reads host state");
    std::vector<ValueId> operands;
    for (ValueId v : node.inputs) operands.push_back(v < 0 ? -1 : remap[v]);
    std::vector<TensorMeta> metas;
    for (ValueId v : node.outputs) metas.push_back(graph.values[v].meta);
    const int index = backward.add_node(*node.op, node.attrs, std::move(operands), metas);
    backward.nodes[index].call_site = node.call_site;
    backward.nodes[index].recomputed = node.recomputed;
    for (size_t o = 0; o < node.outputs.size(); ++o) remap[node.outputs[o]] = backward.nodes[index].outputs[o];
  }
  for (ValueId v : arrivals) backward.outputs.push_back(remap[v]);

  // The forward graph: what fn's capture recorded, its outputs followed by the saved values.
  graph.nodes.resize(nodes_before);
  graph.values.resize(values_before);
  graph.inputs.resize(inputs_before);
  graph.state_inputs.resize(states_before);
  graph.state_tensors.resize(states_before);
  graph.outputs.insert(graph.outputs.end(), saved.begin(), saved.end());
  captured.interface.saved_count = static_cast<int>(saved.size());
  return captured;
}

void attach_compiled_backward(const std::shared_ptr<BackwardProgram>& program, const std::vector<Tensor>& inputs,
                              const Graph& forward, std::vector<Tensor>& outputs) {
  const size_t results = outputs.size() - static_cast<size_t>(program->interface.saved_count);
  std::vector<Tensor> saved(outputs.begin() + static_cast<std::ptrdiff_t>(results), outputs.end());
  outputs.resize(results);
  auto node = std::make_shared<CompiledBackward>(program, std::move(saved));
  for (const GradientBoundary& boundary : program->interface.boundaries) {
    const Tensor target = boundary.is_input ? inputs[boundary.index] : Tensor(forward.state_tensors[boundary.index]);
    node->next_edges.push_back(autograd::gradient_edge(target));
  }
  take_history(node, program->interface.differentiable, outputs, /*eager=*/false);
}

void attach_eager_call_backward(const std::vector<Tensor>& inputs, std::vector<Tensor>& results, uint64_t first_node) {
  std::vector<int> made_by_fn;
  for (size_t r = 0; r < results.size(); ++r) {
    const Tensor& result = results[r];
    if (!result.defined() || !result.grad_fn() || result.grad_fn()->sequence_nr() < first_node) continue;
    // As the capture: a history fn already ran backward through gets no second one.
    if (result.grad_fn()->saved_released()) continue;
    const auto is_result = [&](const Tensor& input) { return input.defined() && input.impl() == result.impl(); };
    if (std::any_of(inputs.begin(), inputs.end(), is_result)) continue;
    made_by_fn.push_back(static_cast<int>(r));
  }
  if (made_by_fn.empty()) return;
  auto node = std::make_shared<EagerCallBackward>(static_cast<int>(made_by_fn.size()));
  for (int r : made_by_fn) node->next_edges.push_back(autograd::gradient_edge(results[r]));
  take_history(node, made_by_fn, results, /*eager=*/true);
}

}  // namespace ember::graph
