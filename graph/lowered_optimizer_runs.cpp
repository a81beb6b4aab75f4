// LoweredExecutor: consecutive per-parameter optimizer steps launched as one multi-tensor call.
//
// Capture records an optimizer's update per parameter (adam_step_, sgd_step_: in-place nodes with
// their own outputs, which is what functionalization and the memory plan work on), because the
// multi-tensor ops write a whole list in place and return nothing a graph could bind. The executor
// recovers the batching: a run of consecutive steps of one such op on one device and dtype becomes
// one call of _multi_adam_step_ / _multi_sgd_step_ over the concatenated inputs, so a CUDA step
// launches one kernel per 48 parameters instead of one per parameter (on the CPU the multi-tensor
// kernel is the same per-parameter loop, bit for bit). Parameters of different param groups can
// sit in one run: after the per-call refresh (learning rate, step count) the run is split where
// the attributes differ.

#include "graph/lowered_executor.h"
#include "graph/pass_util.h"

namespace ember::graph {

namespace {

struct MultiTensorForm {
  const char* single;
  const char* multi;
  size_t width;  // inputs per parameter, the same in both ops
};

constexpr MultiTensorForm kForms[] = {{"adam_step_", "_multi_adam_step_", 5}, {"sgd_step_", "_multi_sgd_step_", 3}};

const MultiTensorForm* form_of(const Node& node) {
  for (const MultiTensorForm& form : kForms)
    if (node.op->name == form.single && node.inputs.size() == form.width) return &form;
  return nullptr;
}

// The parameter's device and dtype (every tensor of a step shares them; the kernels check).
TensorMeta parameter_meta(const Graph& graph, const Node& node) {
  return node.inputs[0] < 0 ? TensorMeta{} : graph.values[node.inputs[0]].meta;
}

}  // namespace

void LoweredExecutor::find_optimizer_runs(const Graph& graph) {
  for (size_t s = 0; s < steps_.size();) {
    const Node& node = graph.nodes[steps_[s].node];
    const MultiTensorForm* form = steps_[s].kind == StepKind::InPlace ? form_of(node) : nullptr;
    const TensorMeta meta = form ? parameter_meta(graph, node) : TensorMeta{};
    const OpDef* multi = form && node.inputs[0] >= 0 ? &registry().get(form->multi) : nullptr;
    const Kernel kernel = multi ? multi->kernel_for(meta.device) : nullptr;
    size_t end = s + 1;
    while (kernel && end < steps_.size()) {
      const Node& next = graph.nodes[steps_[end].node];
      if (steps_[end].kind != StepKind::InPlace || form_of(next) != form) break;
      const TensorMeta next_meta = parameter_meta(graph, next);
      if (next.inputs[0] < 0 || next_meta.device != meta.device || next_meta.dtype != meta.dtype) break;
      ++end;
    }
    if (kernel && end - s > 1) {
      steps_[s].run_length = static_cast<int>(end - s);
      steps_[s].multi_op = multi;
      steps_[s].multi_kernel = kernel;
      for (size_t k = s + 1; k < end; ++k) steps_[k].run_length = 0;
    }
    s = end;
  }
}

void LoweredExecutor::run_optimizer_run(Graph& graph, size_t first) {
  const Step& leader = steps_[first];
  const size_t end = first + static_cast<size_t>(leader.run_length);
  for (size_t k = first; k < end; ++k) {
    Node& node = graph.nodes[steps_[k].node];
    refresh_host_state(node);
  }
  TensorList none;
  for (size_t k = first; k < end;) {
    const Attrs& attrs = graph.nodes[steps_[k].node].attrs;
    size_t same = k + 1;
    while (same < end && identical_attrs(graph.nodes[steps_[same].node].attrs, attrs)) ++same;
    run_inputs_.clear();
    for (size_t j = k; j < same; ++j) run_inputs_.insert(run_inputs_.end(), steps_[j].inputs.begin(), steps_[j].inputs.end());
    leader.multi_kernel(OpCall{*leader.multi_op, run_inputs_, attrs}, none);
    k = same;
  }
  // Keeps its capacity, not the handles: a state tensor's references between calls are counted
  // by compile's guard (a tensor only the compiled entry holds was dropped by its owner).
  run_inputs_.clear();
}

std::vector<int> LoweredExecutor::optimizer_runs() const {
  std::vector<int> lengths;
  for (const Step& step : steps_)
    if (step.run_length > 1) lengths.push_back(step.run_length);
  return lengths;
}

}  // namespace ember::graph
