// The fusion pass. The rule, kept simple on purpose:
//  - A group starts at a fusible node, visiting nodes from last to first, so the group's root is
//    its last node: a pointwise node, or a sum/mean whose input a fusible node produces.
//  - A producer joins when it is fusible, its value has the group's iteration shape and dtype,
//    and EVERY user of that value is already in the group. So no value computed inside a group
//    is needed outside it (a group has one output and nothing is recomputed), and no cycle can
//    form (any path out of a member goes through its users, all inside). Shared producers (a relu
//    output feeding both the next layer and relu_backward) stay separate nodes.
//  - Values the graph returns, writes back, installs as .grad or mutates later (CSE's pinned
//    values) never become group-internal; in-place nodes and nodes with per-call host scalars
//    are never fused, and no group spans an in-place node (the fused node runs at the root's
//    place, so its inputs must hold then what they held for every member).
#include "graph/fusion.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "graph/codegen_cpp.h"
#include "graph/pass_util.h"
#include "graph/passes.h"

namespace ember::graph {

namespace {

bool is_reduction_root(const Graph& graph, const Node& node) {
  if (node.op->name != "sum" && node.op->name != "mean") return false;
  if (node.refresh || node.inputs.size() != 1 || node.inputs[0] < 0) return false;
  const TensorMeta& input = graph.values[node.inputs[0]].meta;
  const TensorMeta& output = graph.values[node.outputs[0]].meta;
  return input.device.is_cpu() && is_floating(input.dtype) && output.dtype == input.dtype;
}

// Bit d set for each reduced dim; no dims means all (the sum/mean attribute convention).
uint32_t reduced_mask(const Dims& dims, int rank) {
  if (dims.size() == 0) return rank == 0 ? 0u : (1u << rank) - 1u;
  uint32_t mask = 0;
  for (int64_t dim : dims) mask |= 1u << (dim < 0 ? dim + rank : dim);
  return mask;
}

struct Grouping {
  std::vector<int> members;  // node indices, ascending
  FusedGroup group;
};

class Fuser {
 public:
  Fuser(Graph& graph, bool log) : graph_(graph), log_(log), group_of_(graph.nodes.size(), -1) {
    users_.resize(graph.values.size());
    for (size_t n = 0; n < graph.nodes.size(); ++n)
      for (ValueId input : graph.nodes[n].inputs)
        if (input >= 0) users_[input].push_back(static_cast<int>(n));
    escapes_ = pinned_values(graph);
    inplace_before_.assign(graph.nodes.size() + 1, 0);
    for (size_t n = 0; n < graph.nodes.size(); ++n)
      inplace_before_[n + 1] = inplace_before_[n] + (graph.nodes[n].op->kind == OpKind::InPlace ? 1 : 0);
    for (const WriteBack& write : graph.write_backs) escapes_[write.value] = true;
  }

  std::vector<Grouping> find_groups() {
    std::vector<Grouping> groups;
    for (int n = static_cast<int>(graph_.nodes.size()) - 1; n >= 0; --n) {
      if (group_of_[n] >= 0) continue;
      const Node& node = graph_.nodes[n];
      const bool reduction = is_reduction_root(graph_, node);
      if (!reduction && !unfusible_reason(graph_, node).empty()) continue;
      std::vector<int> members = grow(n, reduction);
      const size_t pointwise = members.size() - (reduction ? 1 : 0);
      if (pointwise == 0 || (!reduction && pointwise < 2)) {
        for (int member : members) group_of_[member] = -1;
        continue;
      }
      const int index = static_cast<int>(groups.size());
      for (int member : members) group_of_[member] = index;
      std::sort(members.begin(), members.end());
      groups.push_back({members, describe(members, reduction)});
    }
    return groups;
  }

 private:
  // The group's members grown from `root` through producers until nothing more may join.
  std::vector<int> grow(int root, bool reduction) {
    const Node& node = graph_.nodes[root];
    const TensorMeta& shape_source = graph_.values[reduction ? node.inputs[0] : node.outputs[0]].meta;
    std::vector<int> members{root};
    std::vector<bool> member(graph_.nodes.size(), false);
    member[root] = true;
    group_of_[root] = -2;  // provisional
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t m = 0; m < members.size(); ++m)
        for (ValueId input : graph_.nodes[members[m]].inputs) {
          const std::string reason = join_reason(input, shape_source, member, root);
          if (!reason.empty()) continue;
          const int producer = graph_.values[input].index;
          members.push_back(producer);
          member[producer] = true;
          group_of_[producer] = -2;
          changed = true;
        }
    }
    if (log_) {  // the neighbours that stayed out, and why
      for (int m : members)
        for (ValueId input : graph_.nodes[m].inputs) {
          if (input < 0 || graph_.values[input].source != ValueSource::NodeOutput) continue;
          if (member[graph_.values[input].index]) continue;
          fmt::print(stderr, "[ember fusion] not fused: {} (%{}) into the group of node {} ({}): {}\n",
                     graph_.nodes[graph_.values[input].index].op->name, input, root, node.op->name,
                     join_reason(input, shape_source, member, root));
        }
    }
    return members;
  }

  // Why the producer of `value` may not join the group, or "" when it may.
  std::string join_reason(ValueId value, const TensorMeta& shape, const std::vector<bool>& member, int root) const {
    if (value < 0 || graph_.values[value].source != ValueSource::NodeOutput) return "a graph or state input";
    const int producer = graph_.values[value].index;
    if (member[producer]) return "already in the group";
    if (group_of_[producer] != -1) return "already in another group";
    const std::string unfusible = unfusible_reason(graph_, graph_.nodes[producer]);
    if (!unfusible.empty()) return unfusible;
    const TensorMeta& meta = graph_.values[value].meta;
    if (meta.sizes != shape.sizes || meta.dtype != shape.dtype)
      return fmt::format("its result is {} {}, the group iterates {} {}", meta.sizes, meta.dtype, shape.sizes,
                         shape.dtype);
    if (escapes_[value]) return "its value is returned, written back, installed as .grad or mutated later";
    // The fused node runs at the root's place: an in-place node in between could change what an
    // input of the producer holds by then.
    if (inplace_before_[root] - inplace_before_[producer + 1] > 0)
      return "an in-place node runs between it and the group's root";
    for (int user : users_[value])
      if (!member[user]) return fmt::format("its value is also used by node {} ({})", user, graph_.nodes[user].op->name);
    return "";
  }

  FusedGroup describe(const std::vector<int>& members, bool reduction) const {
    FusedGroup group;
    const Node& root = graph_.nodes[members.back()];
    group.output = graph_.values[root.outputs[0]].meta;
    const TensorMeta& iteration = graph_.values[reduction ? root.inputs[0] : root.outputs[0]].meta;
    group.shape = iteration.sizes;
    group.dtype = iteration.dtype;
    if (reduction) {
      group.root = root.op->name == "sum" ? FusedRoot::Sum : FusedRoot::Mean;
      group.reduced_dims = reduced_mask(root.attrs.get<Dims>("dims"), group.shape.size());
    }
    std::vector<int> operand_of(graph_.values.size(), -1);  // value -> external input index
    std::vector<ValueId> externals;
    const size_t pointwise = members.size() - (reduction ? 1 : 0);
    for (size_t i = 0; i < pointwise; ++i)
      for (ValueId input : graph_.nodes[members[i]].inputs) {
        const bool internal = graph_.values[input].source == ValueSource::NodeOutput &&
                              group_of_[graph_.values[input].index] == group_of_[members.back()];
        if (internal || operand_of[input] >= 0) continue;
        operand_of[input] = static_cast<int>(externals.size());
        externals.push_back(input);
        group.inputs.push_back(graph_.values[input].meta);
      }
    std::vector<int> step_of(graph_.values.size(), -1);
    for (size_t i = 0; i < pointwise; ++i) {
      const Node& node = graph_.nodes[members[i]];
      std::string unused;
      FusedStep step{node.op->name, functor_expression(*node.op, node.attrs, unused), {}};
      for (ValueId input : node.inputs)
        step.operands.push_back(operand_of[input] >= 0 ? operand_of[input]
                                                       : static_cast<int>(externals.size()) + step_of[input]);
      step_of[node.outputs[0]] = static_cast<int>(group.steps.size());
      group.steps.push_back(std::move(step));
    }
    return group;
  }

  Graph& graph_;
  bool log_;
  std::vector<int> group_of_;  // -1: none, -2: provisional, else the group's index
  std::vector<std::vector<int>> users_;
  std::vector<bool> escapes_;
  std::vector<int> inplace_before_;  // [n]: in-place nodes among the first n
};

// The external inputs of a group in its operand order (recomputed the way describe() numbers them).
std::vector<ValueId> external_inputs(const Graph& graph, const std::vector<int>& members, bool reduction) {
  std::vector<bool> internal(graph.values.size(), false);
  for (int m : members) internal[graph.nodes[m].outputs[0]] = true;
  std::vector<bool> seen(graph.values.size(), false);
  std::vector<ValueId> externals;
  for (size_t i = 0; i + (reduction ? 1 : 0) < members.size(); ++i)
    for (ValueId input : graph.nodes[members[i]].inputs)
      if (!internal[input] && !seen[input]) {
        seen[input] = true;
        externals.push_back(input);
      }
  return externals;
}

}  // namespace

std::string unfusible_reason(const Graph& graph, const Node& node) {
  const OpDef& op = *node.op;
  if (op.kind != OpKind::Pointwise) return fmt::format("{} is not a pointwise op", op.name);
  if (node.refresh) return fmt::format("{} reads host scalars per call", op.name);
  if (node.outputs.size() != 1) return fmt::format("{} has {} outputs", op.name, node.outputs.size());
  const TensorMeta& output = graph.values[node.outputs[0]].meta;
  if (!output.device.is_cpu())
    return fmt::format("{} runs on {}: fused CUDA kernels are compiled with NVRTC, not wired in yet", op.name,
                       output.device);
  if (!is_floating(output.dtype))
    return fmt::format("{} gives {}: a group computes one floating dtype", op.name, output.dtype);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] < 0) return fmt::format("{} has an absent input {}", op.name, i);
    const DType dtype = graph.values[node.inputs[i]].meta.dtype;
    if (dtype != output.dtype)
      return fmt::format("{} input {} is {} but its result {}: a group holds one dtype", op.name, i, dtype,
                         output.dtype);
  }
  std::string reason;
  if (functor_expression(op, node.attrs, reason).empty()) return fmt::format("{}: {}", op.name, reason);
  return "";
}

int fuse_pointwise(Graph& graph, const FusionOptions& options) {
  Fuser fuser(graph, options.log);
  std::vector<Grouping> groups = fuser.find_groups();
  if (groups.empty()) return 0;
  // Named in execution order, so the dump reads fused_0, fused_1, ... from top to bottom.
  std::sort(groups.begin(), groups.end(),
            [](const Grouping& a, const Grouping& b) { return a.members.back() < b.members.back(); });
  const int first = static_cast<int>(graph.owned_ops.size());
  std::vector<const FusedGroup*> descriptions;
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].group.name = fmt::format("fused_{}", first + static_cast<int>(g));
    descriptions.push_back(&groups[g].group);
  }
  const std::string source = emit_module_source(descriptions, Target::Cpu);
  std::shared_ptr<CompiledModule> module;
  try {
    module = compile_cpu_module(source, std::getenv("EMBER_LOGS") != nullptr &&
                                            std::strstr(std::getenv("EMBER_LOGS"), "output_code") != nullptr);
  } catch (const Error& error) {
    // No working compiler is an environment problem, not the user's: run unfused.
    fmt::print(stderr, "[ember fusion] running unfused: {}\n", error.what());
    return 0;
  }
  std::vector<int> replaced_by(graph.nodes.size(), -1);  // root node -> group index
  std::vector<bool> removed(graph.nodes.size(), false);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int m : groups[g].members) removed[m] = true;
    replaced_by[groups[g].members.back()] = static_cast<int>(g);
  }
  std::vector<Node> nodes;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (replaced_by[n] >= 0) {
      Grouping& grouping = groups[replaced_by[n]];
      auto def = std::make_shared<FusedOpDef>();
      def->group = grouping.group;
      def->name = def->group.name;
      def->kind = def->group.root == FusedRoot::None ? OpKind::Pointwise : OpKind::Reduction;
      def->schema = def->group.summary();
      def->infer = fused_shape;
      def->kernels[static_cast<int>(DeviceType::CPU)] = fused_cpu_kernel;
      def->module = module;
      def->function = module->symbol(def->name);
      const bool reduction = def->group.root != FusedRoot::None;
      Node node{def.get(), {}, external_inputs(graph, grouping.members, reduction), graph.nodes[n].outputs, {}};
      if (options.log)
        fmt::print(stderr, "[ember fusion] {}: {} over {} {} ({} inputs)\n", def->name, def->schema,
                   def->group.shape, def->group.dtype, node.inputs.size());
      graph.owned_ops.push_back(std::move(def));
      nodes.push_back(std::move(node));
    } else if (!removed[n]) {
      nodes.push_back(std::move(graph.nodes[n]));
    }
  }
  graph.nodes = std::move(nodes);
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (ValueId output : graph.nodes[n].outputs) graph.values[output].index = static_cast<int>(n);
  return static_cast<int>(groups.size());
}

}  // namespace ember::graph
