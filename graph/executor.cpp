// Executor::run: the step loop, write-backs and grad write-backs.
#include "graph/executor.h"

#include "runtime/autocast.h"

namespace ember::graph {

Executor::Executor(Graph graph) : graph_(std::move(graph)), slots_(graph_.values.size()) {}

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs) {
  check(inputs.size() == graph_.inputs.size(), "compiled graph: expected {} inputs, got {}",
        graph_.inputs.size(), inputs.size());
  NoGradGuard no_grad;
  // The graph holds autocast's casts as to_dtype nodes already; they must not be applied twice.
  AutocastGuard no_autocast(autocast_dtype(), false);
  for (size_t i = 0; i < inputs.size(); ++i) slots_[graph_.inputs[i]] = inputs[i];
  for (size_t i = 0; i < graph_.state_inputs.size(); ++i)
    slots_[graph_.state_inputs[i]] = Tensor(graph_.state_tensors[i]);
  for (size_t i = 0; i < graph_.constants.size(); ++i) slots_[graph_.constants[i]] = graph_.constant_tensors[i];
  std::vector<Tensor> call_inputs;
  for (Node& node : graph_.nodes) {
    if (node.refresh) node.refresh(node.attrs);
    call_inputs.clear();
    for (ValueId input : node.inputs) call_inputs.push_back(input < 0 ? Tensor() : slots_[input]);
    TensorList outputs = dispatch(OpCall{*node.op, call_inputs, node.attrs});
    for (size_t i = 0; i < node.outputs.size(); ++i) slots_[node.outputs[i]] = std::move(outputs[static_cast<int>(i)]);
  }
  // In-place steps already wrote into the bound state tensors; a value computed out of place
  // (after a pass rewrote the update) is copied back.
  for (const WriteBack& write : graph_.write_backs) {
    Tensor target(graph_.state_tensors[write.state]);
    if (!slots_[write.value].is_same(target)) target.copy_(slots_[write.value]);
  }
  for (const GradWriteBack& write : graph_.grad_write_backs)
    Tensor(graph_.state_tensors[write.state]).set_grad(write.value < 0 ? Tensor() : slots_[write.value]);
  std::vector<Tensor> results;
  for (ValueId output : graph_.outputs) results.push_back(slots_[output]);
  for (Tensor& slot : slots_) slot = Tensor();  // intermediates die now, as in eager execution
  return results;
}

}  // namespace ember::graph
