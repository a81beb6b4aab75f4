// Executor: chooses the lowered step list or the dispatching loop, and the dispatching loop itself
// (each node through the dispatcher's eager path, as the op would run outside a graph).
#include "graph/executor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/autocast.h"

namespace ember::graph {

namespace {

bool dispatching_forced() {
  const char* value = std::getenv("EMBER_EXECUTOR");
  return value != nullptr && std::strcmp(value, "dispatch") == 0;
}

}  // namespace

Executor::Executor(Graph graph, ExecutorOptions options) : graph_(std::move(graph)), slots_(graph_.values.size()) {
  if (!options.lowered) {
    why_not_lowered_ = "CompileOptions asked for the dispatching executor";
  } else if (dispatching_forced()) {
    why_not_lowered_ = "EMBER_EXECUTOR=dispatch";
  } else {
    why_not_lowered_ = LoweredExecutor::unsupported_reason(graph_);
  }
  if (why_not_lowered_.empty()) lowered_ = std::make_unique<LoweredExecutor>(graph_, options.cuda_graphs);
}

Executor::Executor(Executor&&) noexcept = default;
// The lowered executor's CUDA graphs launch kernels that the graph's fused programs load: they
// must go first, as in the destructor (members die in reverse order), while the defaulted
// assignment would replace graph_ first and unload those kernels under live CUDA graphs.
Executor& Executor::operator=(Executor&& other) noexcept {
  lowered_ = std::move(other.lowered_);
  graph_ = std::move(other.graph_);
  why_not_lowered_ = std::move(other.why_not_lowered_);
  slots_ = std::move(other.slots_);
  return *this;
}
Executor::~Executor() = default;

const MemoryPlan* Executor::memory_plan() const { return lowered_ ? &lowered_->plan() : nullptr; }

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs) {
  // The graph holds autocast's casts as to_dtype nodes already; they must not be applied twice
  // (the lowered path calls kernels directly, but its write-back copies are dispatched).
  AutocastGuard no_autocast(autocast_dtype(), false);
  std::vector<Tensor> results = lowered_ ? lowered_->run(graph_, inputs) : run_dispatching(inputs);
  for (HostEffect& effect : graph_.final_effects) effect.replay();
  return results;
}

// As LoweredExecutor::finish_after_error: what eager execution keeps when the op at `failed`
// raises (the write-backs of the values computed by then, earlier host effects), then the
// intermediates die.
void Executor::keep_after_error(std::span<const Tensor> inputs, size_t failed) {
  try {
    for (const WriteBack& write : graph_.write_backs) {
      Tensor target(graph_.state_tensors[write.state]);
      if (slots_[write.value].defined() && !slots_[write.value].is_same(target)) target.copy_(slots_[write.value]);
    }
    const auto read_by_graph = [&](const TensorImpl* grad) {
      return std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& input) { return input.impl() == grad; }) ||
             std::any_of(graph_.state_tensors.begin(), graph_.state_tensors.end(),
                         [&](const std::shared_ptr<TensorImpl>& state) { return state.get() == grad; });
    };
    for (const GradWriteBack& write : graph_.grad_write_backs) {
      if (write.value < 0) continue;
      Tensor leaf(grad_leaf_tensor(graph_, write.leaf, inputs));
      if (slots_[write.value].defined()) {
        leaf.set_grad(slots_[write.value]);
      } else if (const Tensor old = leaf.grad(); old.defined() && !read_by_graph(old.impl())) {
        leaf.set_grad(Tensor());  // a .grad the graph replaces unread: the lowered executor drops it first
      }
    }
    replay_effects_before_error(graph_, failed);
  } catch (...) {  // the caller gets the replay's error
  }
  for (Tensor& slot : slots_) slot = Tensor();
}

std::vector<Tensor> Executor::run_dispatching(std::span<const Tensor> inputs) {
  check(inputs.size() == graph_.inputs.size(), "compiled graph: expected {} inputs, got {}",
        graph_.inputs.size(), inputs.size());
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) slots_[graph_.inputs[i]] = inputs[i];
  for (size_t i = 0; i < graph_.state_inputs.size(); ++i)
    slots_[graph_.state_inputs[i]] = Tensor(graph_.state_tensors[i]);
  for (size_t i = 0; i < graph_.constants.size(); ++i) slots_[graph_.constants[i]] = graph_.constant_tensors[i];
  std::vector<Tensor> call_inputs;
  for (Node& node : graph_.nodes) {
    try {
      refresh_host_state(node);
      call_inputs.clear();
      for (ValueId input : node.inputs) call_inputs.push_back(input < 0 ? Tensor() : slots_[input]);
      TensorList outputs = dispatch(OpCall{*node.op, call_inputs, node.attrs});
      for (size_t i = 0; i < node.outputs.size(); ++i)
        slots_[node.outputs[i]] = std::move(outputs[static_cast<int>(i)]);
    } catch (const Error&) {
      keep_after_error(inputs, static_cast<size_t>(&node - graph_.nodes.data()));
      rethrow_at_call_site(node);
    }
  }
  // In-place steps already wrote into the bound state tensors; a value computed out of place
  // (after a pass rewrote the update) is copied back.
  for (const WriteBack& write : graph_.write_backs) {
    Tensor target(graph_.state_tensors[write.state]);
    if (!slots_[write.value].is_same(target)) target.copy_(slots_[write.value]);
  }
  for (const GradWriteBack& write : graph_.grad_write_backs)
    Tensor(grad_leaf_tensor(graph_, write.leaf, inputs)).set_grad(write.value < 0 ? Tensor() : slots_[write.value]);
  std::vector<Tensor> results;
  for (ValueId output : graph_.outputs) results.push_back(slots_[output]);
  for (Tensor& slot : slots_) slot = Tensor();  // intermediates die now, as in eager execution
  return results;
}

}  // namespace ember::graph
