// DCE and CSE over the captured graph.
#include "graph/passes.h"

#include <bit>
#include <map>
#include <string_view>

#include "graph/pass_util.h"

namespace ember::graph {

void renumber(Graph& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (ValueId output : graph.nodes[n].outputs) graph.values[output].index = static_cast<int>(n);
}

int remove_nodes(Graph& graph, const std::vector<bool>& removed) {
  std::vector<Node> kept;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (!removed[n]) kept.push_back(std::move(graph.nodes[n]));
  const int dropped = static_cast<int>(graph.nodes.size() - kept.size());
  graph.nodes = std::move(kept);
  renumber(graph);
  return dropped;
}

bool identical_attrs(const Attrs& a, const Attrs& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i) {
    if (std::string_view(a.name(i)) != b.name(i)) return false;
    const double* number = std::get_if<double>(&a.value(i));
    const double* other = std::get_if<double>(&b.value(i));
    if (number != nullptr && other != nullptr ? std::bit_cast<uint64_t>(*number) != std::bit_cast<uint64_t>(*other)
                                              : !(a.value(i) == b.value(i)))
      return false;
  }
  return true;
}

bool is_mutated_input(const OpDef& op, size_t i) {
  return op.kind == OpKind::InPlace && i < 32 && ((op.mutated_inputs >> i) & 1u) != 0;
}

std::vector<bool> pinned_values(const Graph& graph) {
  std::vector<bool> pinned(graph.values.size(), false);
  for (const Node& node : graph.nodes)
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] >= 0 && is_mutated_input(*node.op, i)) pinned[node.inputs[i]] = true;
  for (ValueId output : graph.outputs) pinned[output] = true;
  for (const GradWriteBack& write : graph.grad_write_backs)
    if (write.value >= 0) pinned[write.value] = true;
  // A pinned view pins the value it aliases; walking backwards reaches chains of views.
  for (auto node = graph.nodes.rbegin(); node != graph.nodes.rend(); ++node)
    if (node->op->kind == OpKind::View && pinned[node->outputs[0]] && node->inputs[0] >= 0)
      pinned[node->inputs[0]] = true;
  return pinned;
}

int eliminate_dead_code(Graph& graph) {
  std::vector<bool> live(graph.values.size(), false);
  for (ValueId output : graph.outputs) live[output] = true;
  for (const WriteBack& write : graph.write_backs) live[write.value] = true;
  for (const GradWriteBack& write : graph.grad_write_backs)
    if (write.value >= 0) live[write.value] = true;
  std::vector<bool> dead(graph.nodes.size(), true);
  for (size_t n = graph.nodes.size(); n-- > 0;) {
    const Node& node = graph.nodes[n];
    // In-place nodes change memory others may read; a refresh changes host state (the step
    // count, the generator's offset), which must advance on every replay as eagerly.
    bool needed = node.op->kind == OpKind::InPlace || node.refresh;
    for (ValueId output : node.outputs) needed = needed || live[output];
    if (!needed) continue;
    dead[n] = false;
    for (ValueId input : node.inputs)
      if (input >= 0) live[input] = true;
  }
  return remove_nodes(graph, dead);
}

int eliminate_common_subexpressions(Graph& graph) {
  const std::vector<bool> pinned = pinned_values(graph);
  std::vector<ValueId> replacement(graph.values.size());
  for (size_t v = 0; v < replacement.size(); ++v) replacement[v] = static_cast<ValueId>(v);
  auto resolve = [&](ValueId id) { return id < 0 ? id : replacement[id]; };
  // Views and in-place results stay aliases of their base's buffer in the IR, so one value id
  // can hold different data before and after an in-place write into its buffer (through itself
  // or through another view). Each input's key therefore carries how many writes its buffer
  // family had seen: sum(t) before and after t.t().mul_(2) are not the same expression.
  std::vector<ValueId> family(graph.values.size());
  for (size_t v = 0; v < family.size(); ++v) family[v] = static_cast<ValueId>(v);
  // Inputs sharing a buffer are one family, transitively: an input may share bytes with several
  // others (c overlapping a and b), each pair listed once.
  const auto root = [&](ValueId v) {
    while (family[v] != v) v = family[v] = family[family[v]];
    return v;
  };
  for (const auto& [first, twin] : graph.shared_buffers) family[root(twin)] = root(first);
  for (size_t v = 0; v < family.size(); ++v) family[v] = root(static_cast<ValueId>(v));
  std::vector<int> writes(graph.values.size(), 0);
  // Candidates by (op, inputs and their writes so far); attributes are compared exactly among them.
  std::map<std::pair<const OpDef*, std::vector<ValueId>>, std::vector<int>> seen;
  std::vector<Node> kept;
  int removed = 0;
  for (Node& node : graph.nodes) {
    for (ValueId& input : node.inputs) input = resolve(input);
    bool eligible = node.op->kind != OpKind::InPlace && !node.refresh && !node.recomputed;
    for (ValueId output : node.outputs) eligible = eligible && !pinned[output];
    if (eligible) {
      std::vector<ValueId> key = node.inputs;
      for (ValueId input : node.inputs) key.push_back(input < 0 ? 0 : writes[family[input]]);
      std::vector<int>& candidates = seen[{node.op, std::move(key)}];
      const Node* match = nullptr;
      for (int candidate : candidates)
        if (identical_attrs(kept[candidate].attrs, node.attrs)) match = &kept[candidate];
      if (match != nullptr) {
        for (size_t i = 0; i < node.outputs.size(); ++i) replacement[node.outputs[i]] = match->outputs[i];
        ++removed;
        continue;
      }
      candidates.push_back(static_cast<int>(kept.size()));
    }
    if (node.op->kind == OpKind::View && node.inputs[0] >= 0) family[node.outputs[0]] = family[node.inputs[0]];
    size_t written = 0;
    for (size_t i = 0; i < node.inputs.size() && written < node.outputs.size(); ++i) {
      if (!is_mutated_input(*node.op, i)) continue;
      const ValueId base = node.inputs[i], result = node.outputs[written++];
      if (base < 0) continue;
      family[result] = family[base];
      ++writes[family[base]];
    }
    kept.push_back(std::move(node));
  }
  graph.nodes = std::move(kept);
  for (ValueId& output : graph.outputs) output = resolve(output);
  for (WriteBack& write : graph.write_backs) write.value = resolve(write.value);
  for (GradWriteBack& write : graph.grad_write_backs) write.value = resolve(write.value);
  renumber(graph);
  return removed;
}

}  // namespace ember::graph
