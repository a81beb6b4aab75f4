// Constant folding: nodes computed from constants alone run once at compile time and their
// results become constants the graph owns (Graph::constants), so replays skip them.
#include "graph/pass_util.h"
#include "graph/passes.h"
#include "runtime/autocast.h"

namespace ember::graph {

namespace {

// Random ops draw a new range of the generator on every call (folding would freeze one draw);
// in-place ops change a buffer; nodes with per-call host scalars depend on the call.
bool foldable_op(const Node& node) {
  const std::string& name = node.op->name;
  const bool random = node.attrs.has("seed") || name == "rand" || name == "randn" || name == "randint" ||
                      name == "dropout";
  return !random && node.op->kind != OpKind::InPlace && !node.refresh;
}

}  // namespace

int fold_constants(Graph& graph) {
  // Folded values must never be mutated, returned or installed as a .grad: the graph hands the
  // same tensor to every replay, which would then see (or leak) another call's changes.
  const std::vector<bool> pinned = pinned_values(graph);
  std::vector<Tensor> known(graph.values.size());
  for (size_t i = 0; i < graph.constants.size(); ++i) known[graph.constants[i]] = graph.constant_tensors[i];
  NoGradGuard no_grad;
  // The nodes hold autocast's casts already (as the executor knows): the caller's autocast, on
  // while compile runs the passes, must not cast a folded node's inputs a second time.
  AutocastGuard no_autocast(autocast_dtype(), false);
  std::vector<Node> kept;
  int folded = 0;
  for (Node& node : graph.nodes) {
    bool eligible = foldable_op(node);
    for (ValueId input : node.inputs) eligible = eligible && (input < 0 || known[input].defined());
    for (ValueId output : node.outputs) eligible = eligible && !pinned[output];
    if (!eligible) {
      kept.push_back(std::move(node));
      continue;
    }
    std::vector<Tensor> inputs;
    for (ValueId input : node.inputs) inputs.push_back(input < 0 ? Tensor() : known[input]);
    // The same kernel replay would call, on the same values: the constant is bit-identical.
    TensorList outputs = dispatch(OpCall{*node.op, inputs, node.attrs});
    for (size_t i = 0; i < node.outputs.size(); ++i) known[node.outputs[i]] = outputs[static_cast<int>(i)];
    ++folded;
  }
  graph.nodes = std::move(kept);
  renumber(graph);
  // A folded value still read by a remaining node or a write-back becomes a constant; the ones
  // only folded nodes read are gone with them.
  std::vector<bool> read(graph.values.size(), false);
  for (const Node& node : graph.nodes)
    for (ValueId input : node.inputs)
      if (input >= 0) read[input] = true;
  for (const WriteBack& write : graph.write_backs) read[write.value] = true;
  for (size_t id = 0; id < graph.values.size(); ++id) {
    Value& value = graph.values[id];
    if (!read[id] || value.source != ValueSource::NodeOutput || !known[id].defined()) continue;
    value.source = ValueSource::Constant;
    value.index = static_cast<int>(graph.constants.size());
    value.output = 0;
    graph.constants.push_back(static_cast<ValueId>(id));
    graph.constant_tensors.push_back(known[id]);
  }
  return folded;
}

int drop_unused_constants(Graph& graph) {
  std::vector<bool> read(graph.values.size(), false);
  for (const Node& node : graph.nodes)
    for (ValueId input : node.inputs)
      if (input >= 0) read[input] = true;
  for (const WriteBack& write : graph.write_backs) read[write.value] = true;
  for (ValueId output : graph.outputs) read[output] = true;
  for (const GradWriteBack& write : graph.grad_write_backs)
    if (write.value >= 0) read[write.value] = true;
  std::vector<ValueId> constants;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < graph.constants.size(); ++i) {
    const ValueId id = graph.constants[i];
    if (!read[id]) continue;
    graph.values[id].index = static_cast<int>(constants.size());
    constants.push_back(id);
    tensors.push_back(std::move(graph.constant_tensors[i]));
  }
  const int dropped = static_cast<int>(graph.constants.size() - constants.size());
  graph.constants = std::move(constants);
  graph.constant_tensors = std::move(tensors);
  return dropped;
}

}  // namespace ember::graph
