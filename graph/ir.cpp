// Graph construction, the FX-style text dump, DOT export and the verifier.
#include "graph/ir.h"

#include <bit>

#include <fmt/format.h>

#include "runtime/error.h"

namespace ember::graph {

void rethrow_at_call_site(const Node& node) {
  try {
    throw;
  } catch (const Error& error) {
    if (CallSite::known() || !node.call_site) throw;
    const CallSiteScope site(*node.call_site);
    throw Error(fmt::format("{}{} (replayed by a compiled graph)", error.what(), CallSite::describe()));
  }
}

TensorMeta meta_of(const Tensor& tensor) { return {tensor.sizes(), tensor.dtype(), tensor.device()}; }

void replay_effects_before_error(Graph& graph, size_t failed) {
  const int position = graph.nodes[failed].captured_at;
  if (position < 0) return;
  const auto replay_earlier = [position](std::vector<HostEffect>& effects, const std::vector<int>& positions) {
    for (size_t e = 0; e < effects.size() && e < positions.size(); ++e)
      if (positions[e] <= position) effects[e].replay();
  };
  for (size_t n = failed + 1; n < graph.nodes.size(); ++n)
    replay_earlier(graph.nodes[n].effects, graph.nodes[n].effect_positions);
  replay_earlier(graph.final_effects, graph.final_effect_positions);
}

const std::shared_ptr<TensorImpl>& grad_leaf_tensor(const Graph& graph, const GradLeaf& leaf,
                                                    std::span<const Tensor> inputs) {
  return leaf.argument ? inputs[leaf.index].impl_ptr() : graph.state_tensors[leaf.index];
}

ValueId Graph::add_value(const TensorMeta& meta, ValueSource source, int index, int output) {
  values.push_back({meta, source, index, output});
  return static_cast<ValueId>(values.size()) - 1;
}

ValueId Graph::add_input(const TensorMeta& meta) {
  const ValueId id = add_value(meta, ValueSource::GraphInput, static_cast<int>(inputs.size()));
  inputs.push_back(id);
  return id;
}

ValueId Graph::add_state(const std::shared_ptr<TensorImpl>& impl) {
  const TensorMeta meta{impl->sizes, impl->dtype, impl->device};
  const ValueId id = add_value(meta, ValueSource::StateInput, static_cast<int>(state_inputs.size()));
  state_inputs.push_back(id);
  state_tensors.push_back(impl);
  return id;
}

ValueId Graph::add_constant(const Tensor& tensor) {
  const ValueId id = add_value(meta_of(tensor), ValueSource::Constant, static_cast<int>(constants.size()));
  constants.push_back(id);
  constant_tensors.push_back(tensor);
  return id;
}

int Graph::add_node(const OpDef& op, const Attrs& attrs, std::vector<ValueId> node_inputs,
                    std::span<const TensorMeta> output_metas) {
  const int index = static_cast<int>(nodes.size());
  Node node{&op, attrs, std::move(node_inputs), {}, {}};
  for (size_t i = 0; i < output_metas.size(); ++i)
    node.outputs.push_back(add_value(output_metas[i], ValueSource::NodeOutput, index, static_cast<int>(i)));
  nodes.push_back(std::move(node));
  return index;
}

int Graph::count_op(const std::string& name) const {
  int count = 0;
  for (const Node& node : nodes) count += node.op->name == name ? 1 : 0;
  return count;
}

namespace {

std::string value_name(const Graph& graph, ValueId id) {
  if (id < 0) return "None";
  const Value& value = graph.values[id];
  switch (value.source) {
    case ValueSource::GraphInput: return fmt::format("%x{}", value.index);
    case ValueSource::StateInput: return fmt::format("%s{}", value.index);
    case ValueSource::Constant: return fmt::format("%c{}", value.index);
    case ValueSource::NodeOutput: break;
  }
  return fmt::format("%{}", id);
}

// `%s0` for a state leaf, `%x1` for an argument.
std::string leaf_name(const Graph& graph, const GradLeaf& leaf) {
  return value_name(graph, leaf.argument ? graph.inputs[leaf.index] : graph.state_inputs[leaf.index]);
}

std::string type_text(const TensorMeta& meta) {
  std::string text = fmt::format("{} {}", meta.sizes, meta.dtype);
  if (!meta.device.is_cpu()) text += fmt::format(" {}", meta.device);
  return text;
}

std::string node_call_text(const Graph& graph, const Node& node) {
  std::string text = node.op->name + "(";
  for (size_t i = 0; i < node.inputs.size(); ++i)
    text += (i ? ", " : "") + value_name(graph, node.inputs[i]);
  if (node.attrs.size() > 0) text += (node.inputs.empty() ? "" : ", ") + node.attrs.str();
  return text + ")";
}

// A synthesized op (a fused group) shows what it computes: its schema holds "relu_backward+mul".
std::string owned_op_summary(const Graph& graph, const Node& node) {
  for (const auto& op : graph.owned_ops)
    if (op.get() == node.op) return "  " + op->schema;
  return "";
}

// A tensor with `meta`'s geometry and no storage: what shape and view rules read.
Tensor meta_tensor(const TensorMeta& meta) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = meta.sizes;
  impl->strides = contiguous_strides(meta.sizes, "compiled graph");
  impl->dtype = meta.dtype;
  impl->device = meta.device;
  return Tensor(std::move(impl));
}

bool same_type(const TensorMeta& a, const TensorMeta& b) {
  return a.sizes == b.sizes && a.dtype == b.dtype && a.device == b.device;
}

// Re-derives a node's output types from its inputs' types with the op's own rules.
void verify_types(const Graph& graph, const Node& node, int node_index) {
  const OpDef& op = *node.op;
  std::vector<Tensor> inputs;
  for (ValueId id : node.inputs) inputs.push_back(id < 0 ? Tensor() : meta_tensor(graph.values[id].meta));
  const OpCall call{op, inputs, node.attrs};
  OutputMetas expected;
  if (op.kind == OpKind::View) {
    expected[0] = {op.view(call).sizes, inputs[0].dtype(), inputs[0].device()};
  } else if (op.kind == OpKind::InPlace) {
    int output = 0;
    for (size_t i = 0; i < inputs.size() && i < 32; ++i)
      if ((op.mutated_inputs >> i) & 1u) {
        if (inputs[i].defined()) expected[output] = meta_of(inputs[i]);
        else expected[output] = graph.values[node.outputs[output]].meta;  // absent optional state
        ++output;
      }
  } else {
    for (TensorMeta& meta : expected) meta.device = node.inputs.empty() ? kCPU : inputs[0].device();
    op.infer(call, expected);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const TensorMeta& actual = graph.values[node.outputs[i]].meta;
    check(same_type(actual, expected[i]), "verify: node {} ({}) output {} is {} but its shape rule gives {}",
          node_index, op.name, i, type_text(actual), type_text(expected[i]));
  }
}

}  // namespace

std::string to_text(const Graph& graph) {
  std::string text = "graph(";
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    text += fmt::format("{}{}: {}", i ? ", " : "", value_name(graph, graph.inputs[i]),
                        type_text(graph.values[graph.inputs[i]].meta));
  text += "):\n";
  for (const GradInput& grad : graph.grad_inputs)
    text += fmt::format("    # {} is the .grad of {}, read per call\n", value_name(graph, graph.inputs[grad.input]),
                        leaf_name(graph, grad.leaf));
  for (ValueId id : graph.state_inputs)
    text += fmt::format("    {} = state()  # {}\n", value_name(graph, id), type_text(graph.values[id].meta));
  for (ValueId id : graph.constants)
    text += fmt::format("    {} = constant()  # {}\n", value_name(graph, id), type_text(graph.values[id].meta));
  for (const auto& [first, twin] : graph.shared_buffers)
    text += fmt::format("    # {} shares its buffer with {}\n", value_name(graph, twin), value_name(graph, first));
  for (const Node& node : graph.nodes) {
    for (const HostEffect& effect : node.effects) text += fmt::format("    host_effect({})\n", effect.what);
    std::string names, types;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      names += (i ? ", " : "") + value_name(graph, node.outputs[i]);
      types += (i ? "; " : "") + type_text(graph.values[node.outputs[i]].meta);
    }
    text += fmt::format("    {} = {}  # {}{}{}\n", names, node_call_text(graph, node), types,
                        node.refresh ? " (host scalars read per call)" : "", owned_op_summary(graph, node));
  }
  for (const HostEffect& effect : graph.final_effects) text += fmt::format("    host_effect({})\n", effect.what);
  for (const WriteBack& write : graph.write_backs)
    text += fmt::format("    write_back({}, {})\n", value_name(graph, graph.state_inputs[write.state]),
                        value_name(graph, write.value));
  for (const GradWriteBack& write : graph.grad_write_backs)
    text += fmt::format("    set_grad({}, {})\n", leaf_name(graph, write.leaf), value_name(graph, write.value));
  text += "    return (";
  for (size_t i = 0; i < graph.outputs.size(); ++i) text += (i ? ", " : "") + value_name(graph, graph.outputs[i]);
  return text + ")\n";
}

std::string to_dot(const Graph& graph) {
  std::string text = "digraph ember {\n  node [shape=box, fontname=monospace];\n";
  auto producer = [&](ValueId id) {
    const Value& value = graph.values[id];
    if (value.source == ValueSource::NodeOutput) return fmt::format("n{}", value.index);
    return fmt::format("v{}", id);
  };
  for (ValueId id : graph.inputs)
    text += fmt::format("  v{} [label=\"{}\\n{}\", shape=ellipse];\n", id, value_name(graph, id),
                        type_text(graph.values[id].meta));
  for (ValueId id : graph.state_inputs)
    text += fmt::format("  v{} [label=\"{}\\n{}\", shape=ellipse, style=dashed];\n", id,
                        value_name(graph, id), type_text(graph.values[id].meta));
  for (ValueId id : graph.constants)
    text += fmt::format("  v{} [label=\"{}\\n{}\", shape=ellipse, style=dotted];\n", id,
                        value_name(graph, id), type_text(graph.values[id].meta));
  // Host effects become notes: before the node whose refresh they precede, or after the graph.
  auto effect_note = [&](const std::string& id, const HostEffect& effect) {
    text += fmt::format("  {} [label=\"host_effect({})\", shape=note];\n", id, effect.what);
  };
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (size_t e = 0; e < node.effects.size(); ++e) {
      effect_note(fmt::format("e{}_{}", n, e), node.effects[e]);
      text += fmt::format("  e{}_{} -> n{} [style=dotted];\n", n, e, n);
    }
    text += fmt::format("  n{} [label=\"{}\\n{}\"];\n", n, node.op->name,
                        node.outputs.empty() ? "" : type_text(graph.values[node.outputs[0]].meta));
    for (ValueId input : node.inputs)
      if (input >= 0) text += fmt::format("  {} -> n{};\n", producer(input), n);
  }
  for (size_t e = 0; e < graph.final_effects.size(); ++e) effect_note(fmt::format("final{}", e), graph.final_effects[e]);
  for (const WriteBack& write : graph.write_backs)
    text += fmt::format("  {} -> v{} [style=dashed, label=\"write back\"];\n", producer(write.value),
                        graph.state_inputs[write.state]);
  return text + "}\n";
}

void verify(const Graph& graph) {
  const int count = static_cast<int>(graph.values.size());
  std::vector<bool> defined(count, false);
  auto define = [&](ValueId id, const std::string& where) {
    check(id >= 0 && id < count, "verify: {} defines value {} outside the graph's {} values", where, id, count);
    check(!defined[id], "verify: value %{} is defined twice (again by {})", id, where);
    defined[id] = true;
  };
  auto use = [&](ValueId id, const std::string& where) {
    check(id < count && (id < 0 || defined[id]), "verify: {} uses value %{} before it is defined", where, id);
  };
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    define(graph.inputs[i], fmt::format("graph input {}", i));
    const Value& value = graph.values[graph.inputs[i]];
    check(value.source == ValueSource::GraphInput && value.index == static_cast<int>(i),
          "verify: graph input {} is recorded as another kind of value", i);
  }
  check(graph.state_inputs.size() == graph.state_tensors.size(), "verify: {} state inputs but {} bound tensors",
        graph.state_inputs.size(), graph.state_tensors.size());
  for (size_t i = 0; i < graph.state_inputs.size(); ++i) {
    define(graph.state_inputs[i], fmt::format("state input {}", i));
    check(graph.state_tensors[i] != nullptr, "verify: state input {} is bound to no tensor", i);
  }
  const size_t arguments = graph.inputs.size() - graph.grad_inputs.size();
  const auto names_a_leaf = [&](const GradLeaf& leaf) {
    return leaf.index >= 0 && static_cast<size_t>(leaf.index) < (leaf.argument ? arguments : graph.state_inputs.size());
  };
  for (size_t g = 0; g < graph.grad_inputs.size(); ++g) {
    const GradInput& grad = graph.grad_inputs[g];
    check(grad.input == static_cast<int>(arguments + g) && names_a_leaf(grad.leaf),
          "verify: .grad input {} is graph input {} of {} {}, expected input {} of a state or an argument", g,
          grad.input, grad.leaf.argument ? "argument" : "state", grad.leaf.index, arguments + g);
  }
  check(graph.constants.size() == graph.constant_tensors.size(), "verify: {} constants but {} tensors",
        graph.constants.size(), graph.constant_tensors.size());
  for (size_t i = 0; i < graph.constants.size(); ++i) {
    define(graph.constants[i], fmt::format("constant {}", i));
    const Value& value = graph.values[graph.constants[i]];
    check(value.source == ValueSource::Constant && value.index == static_cast<int>(i),
          "verify: constant {} is recorded as another kind of value", i);
    const Tensor& tensor = graph.constant_tensors[i];
    check(tensor.defined() && same_type(meta_of(tensor), value.meta), "verify: constant %c{} holds no tensor of type {}",
          i, type_text(value.meta));
  }
  for (const auto& [first, twin] : graph.shared_buffers)
    for (ValueId id : {first, twin})
      check(id >= 0 && id < count && graph.values[id].source != ValueSource::NodeOutput &&
                graph.values[id].source != ValueSource::Constant,
            "verify: shared buffer pair (%{}, %{}) names a value that is not a graph or state input", first, twin);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const std::string where = fmt::format("node {} ({})", n, node.op->name);
    for (ValueId input : node.inputs) use(input, where);
    // An effect must replay before a refresh: a node that reads no host state may be moved,
    // fused or removed by a pass, and its effects with it.
    check(node.effects.empty() || node.refresh, "verify: {} replays {} host effects but reads no host state", where,
          node.effects.size());
    check(node.outputs.size() == static_cast<size_t>(node.op->kind == OpKind::InPlace
                                                         ? std::popcount(node.op->mutated_inputs)
                                                         : node.op->num_outputs),
          "verify: {} has {} outputs", where, node.outputs.size());
    for (ValueId output : node.outputs) {
      define(output, where);
      const Value& value = graph.values[output];
      check(value.source == ValueSource::NodeOutput && value.index == static_cast<int>(n),
            "verify: value %{} is an output of {} but records another producer", output, where);
    }
    verify_types(graph, node, static_cast<int>(n));
  }
  for (ValueId output : graph.outputs) use(output, "the graph's outputs");
  for (const WriteBack& write : graph.write_backs) {
    use(write.value, "a write-back");
    check(write.value >= 0 && same_type(graph.values[write.value].meta,
                                        graph.values[graph.state_inputs.at(write.state)].meta),
          "verify: write-back of %{} into state %s{} changes its type", write.value, write.state);
  }
  for (const GradWriteBack& write : graph.grad_write_backs) {
    use(write.value, "a grad write-back");
    check(names_a_leaf(write.leaf), "verify: a grad write-back of %{} names {} {}, which the graph does not have",
          write.value, write.leaf.argument ? "argument" : "state", write.leaf.index);
  }
}

}  // namespace ember::graph
