// LoweredExecutor: resolving nodes into steps over stable TensorImpls, and the replay loop.
//
// Every value has one TensorImpl made at compile time. Arena values point at their slice for the
// executor's lifetime; graph inputs, per-call buffers and views of them are re-pointed at the start
// of each call and let go at its end, so the caller's memory is not held between calls. Each
// step's input and output lists hold handles to these impls, so a call builds no lists.
#include "graph/lowered_executor.h"

#include <algorithm>

#include <fmt/format.h>

#include "graph/pass_util.h"
#include "runtime/output_poison.h"
#include "runtime/tensor_alias.h"

namespace ember::graph {

namespace {

// The device whose kernel a node runs: what dispatch_eager would pick for the captured inputs.
Device node_device(const Graph& graph, const Node& node) {
  if (node.op->kind == OpKind::Factory) return node.attrs.get<Device>("device");
  for (ValueId input : node.inputs)
    if (input >= 0) return graph.values[input].meta.device;
  return kCPU;
}

std::shared_ptr<TensorImpl> contiguous_impl(const TensorMeta& meta) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = meta.sizes;
  impl->strides = contiguous_strides(meta.sizes, "compiled graph");
  impl->dtype = meta.dtype;
  impl->device = meta.device;
  return impl;
}

void set_geometry(TensorImpl& impl, const ViewGeometry& geometry) {
  impl.sizes = geometry.sizes;
  impl.strides = geometry.strides;
  impl.offset = geometry.offset;
}

}  // namespace

std::string LoweredExecutor::unsupported_reason(const Graph& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.op->kind == OpKind::View) {
      if (node.inputs.empty() || node.inputs[0] < 0) return fmt::format("node {} ({}) views no tensor", n, node.op->name);
      continue;
    }
    const Device device = node_device(graph, node);
    if (node.op->kernel_for(device) == nullptr)
      return fmt::format("node {} ({}) has no kernel for {}", n, node.op->name, device);
  }
  return "";
}

LoweredExecutor::LoweredExecutor(const Graph& graph, bool cuda_graphs)
    : plan_(plan_memory(graph, {.grads_in_arena = !cuda_graphs})), values_(graph.values), poison_(poison_outputs()) {
  // An arena that gradients escape from is allocated per call (run()); otherwise once, here. Also
  // when it holds no bytes (a batch of 0 rows): its values still need a storage to point into.
  if (!plan_.arena_escapes) arena_ = allocate_arena();
  build_values(graph);
  build_steps(graph);
  find_optimizer_runs(graph);
  if (cuda_graphs) set_up_cuda_graphs(graph);
  for (const std::shared_ptr<TensorImpl>& state : graph.state_tensors) sorted_states_.push_back(state.get());
  std::sort(sorted_states_.begin(), sorted_states_.end());
  for (size_t i = 0; i < graph.write_backs.size(); ++i) {
    const WriteBack& write = graph.write_backs[i];
    // An in-place update of the state tensor itself already wrote the result there.
    const bool in_place = plan_.root[write.value] == graph.state_inputs[write.state] && !plan_.through_view[write.value];
    write_back_copies_.push_back(!in_place);
  }
}

void LoweredExecutor::build_values(const Graph& graph) {
  impls_.resize(graph.values.size());
  for (ValueId id : graph.inputs) impls_[id] = contiguous_impl(graph.values[id].meta);  // re-pointed per call
  for (size_t i = 0; i < graph.state_inputs.size(); ++i) impls_[graph.state_inputs[i]] = graph.state_tensors[i];
  // Constants the folding pass computed: owned by the graph, read like state, never written.
  for (size_t i = 0; i < graph.constants.size(); ++i) impls_[graph.constants[i]] = graph.constant_tensors[i].impl_ptr();
  for (const BufferInterval& buffer : plan_.buffers) {
    std::shared_ptr<TensorImpl> impl = contiguous_impl(graph.values[buffer.root].meta);
    if (plan_.placement[buffer.root] == Placement::Arena) {
      impl->storage = arena_;
      impl->offset = buffer.offset / static_cast<int64_t>(element_size(impl->dtype));
      if (plan_.arena_escapes) arena_roots_.push_back(buffer.root);
    } else {
      per_call_.push_back({buffer.root, static_cast<size_t>(buffer.bytes)});
    }
    impls_[buffer.root] = std::move(impl);
  }
  // Aliases, in node order so a base is built before its views and in-place results.
  for (const Node& node : graph.nodes) {
    if (node.op->kind == OpKind::View) {
      const std::shared_ptr<TensorImpl>& base = impls_[node.inputs[0]];
      auto impl = std::make_shared<TensorImpl>();
      impl->dtype = base->dtype;
      impl->device = base->device;
      impl->is_view = true;
      impl->storage = base->storage;
      impls_[node.outputs[0]] = std::move(impl);
    } else if (node.op->kind == OpKind::InPlace) {
      size_t output = 0;
      for (size_t i = 0; i < node.inputs.size() && output < node.outputs.size(); ++i)
        if (is_mutated_input(*node.op, i)) {
          const ValueId base = node.inputs[i];
          impls_[node.outputs[output++]] = base < 0 ? nullptr : impls_[base];
        }
    }
  }
}

void LoweredExecutor::build_steps(const Graph& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    Step step;
    step.node = static_cast<int>(n);
    for (ValueId input : node.inputs) step.inputs.push_back(input < 0 ? Tensor() : Tensor(impls_[input]));
    if (node.op->kind == OpKind::View) {
      step.kind = StepKind::View;
      step.outputs.push_back(Tensor(impls_[node.outputs[0]]));
      const Placement base = plan_.placement[plan_.root[node.inputs[0]]];
      step.fixed_geometry = base == Placement::Arena || base == Placement::PerCall;
      if (step.fixed_geometry) {
        // The base's geometry is final already (built in node order), and never changes.
        step.geometry = node.op->view(OpCall{*node.op, step.inputs, node.attrs});
        set_geometry(*step.outputs[0].impl(), step.geometry);
      } else {
        view_values_.push_back(node.outputs[0]);
      }
      // Views of per-call memory let go of it between calls with their bases.
      if (base == Placement::PerCall || (base == Placement::Arena && plan_.arena_escapes))
        view_values_.push_back(node.outputs[0]);
    } else {
      step.kind = node.op->kind == OpKind::InPlace ? StepKind::InPlace : StepKind::Compute;
      step.kernel = node.op->kernel_for(node_device(graph, node));
      internal_assert(step.kernel != nullptr, "lowered executor: a node without a kernel was not rejected");
      if (step.kind == StepKind::InPlace) {
        // Eager in-place calls return the mutated inputs themselves, absent optional ones included.
        for (size_t i = 0; i < node.inputs.size(); ++i)
          if (is_mutated_input(*node.op, i)) step.outputs.push_back(step.inputs[i]);
      } else {
        for (ValueId output : node.outputs) step.outputs.push_back(Tensor(impls_[output]));
      }
    }
    steps_.push_back(std::move(step));
  }
}

std::vector<Tensor> LoweredExecutor::run(Graph& graph, std::span<const Tensor> inputs) {
  check(inputs.size() == graph.inputs.size(), "compiled graph: expected {} inputs, got {}", graph.inputs.size(),
        inputs.size());
  NoGradGuard no_grad;  // refreshes and write-back copies must not record autograd history
  if (const std::optional<StreamId> stream = call_order_.before_call(plan_.arena_device)) used_on_stream(graph, *stream);
  if (replay_) return run_cuda_graphs(graph, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorImpl& given = *inputs[i].impl();
    TensorImpl& impl = *impls_[graph.inputs[i]];
    impl.storage = given.storage;
    impl.sizes = given.sizes;  // guarded, as a non-contiguous input's strides; the offset is not
    impl.strides = given.strides;
    impl.offset = given.offset;
  }
  release_replaced_grads(graph, inputs);  // first: the last call's arena may be free again after it
  if (plan_.arena_escapes) {
    arena_ = allocate_arena();
    for (ValueId root : arena_roots_) impls_[root]->storage = arena_;
  }
  for (const PerCallBuffer& buffer : per_call_)
    impls_[buffer.root]->storage = Storage::allocate(buffer.bytes, values_[buffer.root].meta.device);
  failed_node_ = -1;
  try {
    run_steps(graph, 0, steps_.size());
  } catch (const Error&) {
    if (failed_node_ >= 0) finish_after_error(graph, inputs, static_cast<size_t>(failed_node_));
    release_call_memory(graph);
    throw;
  }
  std::vector<Tensor> results = finish_call(graph, inputs, /*clone_outputs=*/false);
  release_call_memory(graph);
  return results;
}

void LoweredExecutor::used_on_stream(const Graph& graph, StreamId stream) {
  if (arena_) arena_->record_stream(stream);
  if (!replay_) return;  // otherwise the per-call buffers are allocated on each call's stream
  for (ValueId id : graph.inputs) impls_[id]->storage->record_stream(stream);
  for (const PerCallBuffer& buffer : per_call_) impls_[buffer.root]->storage->record_stream(stream);
}

void LoweredExecutor::run_steps(Graph& graph, size_t begin, size_t end, bool bump_versions) {
  size_t s = begin;
  try {
    for (; s < end; ++s) {
      Step& step = steps_[s];
      Node& node = graph.nodes[step.node];
      if (step.run_length > 1 && s + static_cast<size_t>(step.run_length) <= end) {
        run_optimizer_run(graph, s);
        if (bump_versions)
          for (size_t k = s; k < s + static_cast<size_t>(step.run_length); ++k)
            for (Tensor& output : steps_[k].outputs)
              if (output.defined()) output.impl()->storage->bump_version();
        s += static_cast<size_t>(step.run_length) - 1;
        continue;
      }
      if (step.kind == StepKind::View) {
        TensorImpl& view = *step.outputs[0].impl();
        if (!step.fixed_geometry) set_geometry(view, node.op->view(OpCall{*node.op, step.inputs, node.attrs}));
        view.storage = step.inputs[0].impl()->storage;
        continue;
      }
      refresh_host_state(node);
      // EMBER_POISON_OUTPUTS=1 (the tests), as in the dispatcher: with buffer reuse an unwritten
      // element would otherwise show a stale value of another graph value instead of failing the
      // comparison with eager. CPU buffers only: a fill kernel must not enter a captured CUDA graph.
      if (poison_ && step.kind == StepKind::Compute)
        for (const Tensor& output : step.outputs)
          if (output.defined() && output.device().is_cpu()) poison(output);
      step.kernel(OpCall{*node.op, step.inputs, node.attrs}, step.outputs);
      if (bump_versions && step.kind == StepKind::InPlace)
        for (Tensor& output : step.outputs)
          if (output.defined()) output.impl()->storage->bump_version();
    }
  } catch (const Error&) {
    failed_node_ = steps_[s].node;
    rethrow_at_call_site(graph.nodes[steps_[s].node]);  // eager's message names the user's line
  }
}

// Eager execution that raises at an op keeps what fn did before it: the gradients backward()
// installed, state updated out of place, host effects (an LR scheduler stepped before the loss).
// So are the grad write-backs and write-back copies of the values computed before `failed`, and
// its earlier effects. A failure here must not replace the error the caller gets.
void LoweredExecutor::finish_after_error(Graph& graph, std::span<const Tensor> inputs, size_t failed) {
  const auto computed = [&](ValueId id) {
    const Value& value = graph.values[id];
    return value.source != ValueSource::NodeOutput || static_cast<size_t>(value.index) < failed;
  };
  try {
    for (size_t i = 0; i < graph.write_backs.size(); ++i) {
      const WriteBack& write = graph.write_backs[i];
      if (write_back_copies_[i] && computed(write.value))
        Tensor(graph.state_tensors[write.state]).copy_(Tensor(impls_[write.value]));
    }
    for (const GradWriteBack& write : graph.grad_write_backs)
      if (write.value >= 0 && computed(write.value))
        Tensor(grad_leaf_tensor(graph, write.leaf, inputs)).set_grad(escape(write.value, inputs));
    replay_effects_before_error(graph, failed);
  } catch (...) {
  }
}

// A .grad the call will replace and does not read (not bound as state, not a graph input) is
// dropped before the new ones are allocated, as eager's zero_grad(set_to_none) would have:
// otherwise old and new gradients coexist and the step's peak memory grows by the size of all
// gradients. One the graph reads stays: a step that then throws (a bad target in the forward)
// must leave it, accumulated gradients and all, as eager would.
// Lookups in sorted lists: a step over thousands of parameters must not compare each .grad with
// every state and input.
void LoweredExecutor::release_replaced_grads(const Graph& graph, std::span<const Tensor> inputs) {
  thread_local std::vector<const TensorImpl*> sorted_inputs;
  sorted_inputs.clear();
  for (const Tensor& input : inputs) sorted_inputs.push_back(input.impl());
  std::sort(sorted_inputs.begin(), sorted_inputs.end());
  auto holds = [](const std::vector<const TensorImpl*>& sorted, const TensorImpl* impl) {
    return std::binary_search(sorted.begin(), sorted.end(), impl);
  };
  for (const GradWriteBack& write : graph.grad_write_backs) {
    TensorImpl& parameter = *grad_leaf_tensor(graph, write.leaf, inputs);
    if (write.value < 0 || !parameter.autograd_meta || !parameter.autograd_meta->grad) continue;
    const TensorImpl* old = parameter.autograd_meta->grad->impl();
    if (!holds(sorted_states_, old) && !holds(sorted_inputs, old)) parameter.autograd_meta->grad.reset();
  }
}

// Write-backs, new .grad tensors and the results the caller receives.
std::vector<Tensor> LoweredExecutor::finish_call(Graph& graph, std::span<const Tensor> inputs, bool clone_outputs) {
  for (size_t i = 0; i < graph.write_backs.size(); ++i) {
    if (!write_back_copies_[i]) continue;
    const WriteBack& write = graph.write_backs[i];
    Tensor(graph.state_tensors[write.state]).copy_(Tensor(impls_[write.value]));
  }
  for (const GradWriteBack& write : graph.grad_write_backs)
    Tensor(grad_leaf_tensor(graph, write.leaf, inputs))
        .set_grad(write.value < 0 ? Tensor() : escape(write.value, inputs));
  std::vector<Tensor> results;
  for (ValueId output : graph.outputs) {
    Tensor result = escape(output, inputs);
    const bool callers_own = plan_.placement[output] == Placement::External && !plan_.through_view[output];
    results.push_back(clone_outputs && result.defined() && !callers_own ? result.clone() : result);
  }
  return results;
}

Tensor LoweredExecutor::escape(ValueId value, std::span<const Tensor> inputs) const {
  if (plan_.placement[value] == Placement::Undefined) return Tensor();
  const ValueId root = plan_.root[value];
  if (plan_.placement[value] == Placement::External && !plan_.through_view[value]) {
    const Value& source = values_[root];
    if (source.source == ValueSource::GraphInput) return inputs[source.index];
    return Tensor(impls_[value]);  // the state tensor itself
  }
  const TensorImpl& stable = *impls_[value];
  return Tensor(alias_impl(stable, stable.is_view));
}

void LoweredExecutor::release_call_memory(const Graph& graph) {
  for (ValueId input : graph.inputs) impls_[input]->storage.reset();
  for (const PerCallBuffer& buffer : per_call_) impls_[buffer.root]->storage.reset();
  for (ValueId view : view_values_) impls_[view]->storage.reset();
  // A per-call arena lives on in the gradients made in it, and no longer than they do.
  for (ValueId root : arena_roots_) impls_[root]->storage.reset();
  if (plan_.arena_escapes) arena_.reset();
}

std::shared_ptr<Storage> LoweredExecutor::allocate_arena() const {
  return Storage::allocate(static_cast<size_t>(plan_.arena_bytes), plan_.arena_device);
}

}  // namespace ember::graph
