// The fusion pass's grouping rule (graph/fusion_rewrite.cpp compiles the groups and rewrites the graph):
//  - A group starts at a fusible node, visiting nodes from last to first, so the group's root is
//    its last node: a pointwise node, or a sum/mean whose input a fusible node produces.
//  - A producer of a member's input joins when it is fusible and its value has the group's
//    iteration shape and its dtype or bool, and it computes in that dtype (bool values ride along
//    as 0 and 1 of the group's one floating dtype). Its value may also have readers outside the group: it then
//    becomes an extra output of the fused node (an export, at most kMaxFusedOutputs - 1 per
//    group), written by the same kernel, so nothing is computed twice. A group reads at most
//    kMaxFusedInputs tensors from outside it (a CUDA kernel's parameter block is bounded).
//  - No cycle: a producer joins only if no path from its value through non-members reaches a
//    member. The group stays convex as it grows (the only new paths start at the newcomer), so
//    contracting it to one node keeps the graph acyclic.
//  - The fused node runs at the root's place, so an outside reader of an export that came before
//    the root moves after it, with whatever it feeds up to the root. Such nodes must be plain
//    (no in-place write, no per-call host scalars) and never join a later group (which would run
//    before them).
//  - One device per group: every member and input lives where the root does (the CPU, or one
//    CUDA device when the build has the CUDA backend; graph/cuda/ compiles those with NVRTC). A
//    sum/mean of any shape is a root there: the generated reduction spreads few long outputs
//    over the whole GPU as the library's does (graph/fused_launch.h).
//  - Values the graph returns, writes back, installs as .grad or mutates later (CSE's pinned
//    values) never join (only a root may produce one); in-place nodes and nodes with per-call
//    host scalars are never fused, and no group spans an in-place node (the fused node runs at
//    the root's place, so its inputs must hold then what they held for every member).
#include "graph/fusion.h"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "graph/fusion_groups.h"
#include "graph/pass_util.h"

namespace ember::graph {

namespace {

// Why fused code cannot run on `device`, or "".
std::string device_reason(Device device) {
#ifdef EMBER_HAS_CUDA
  (void)device;
  return "";
#else
  return device.is_cpu() ? "" : fmt::format("it runs on {} and this build has no CUDA backend", device);
#endif
}

// Bit d set for each reduced dim; no dims means all (the sum/mean attribute convention). The
// dims were checked when the op ran at capture; a 0-d tensor accepts dim 0 or -1 but has nothing
// to reduce (as cpu::reduce_mask), and -1 must not become a shift by -1.
uint32_t reduced_mask(const Dims& dims, int rank) {
  if (rank == 0) return 0u;
  if (dims.size() == 0) return (1u << rank) - 1u;
  uint32_t mask = 0;
  for (int64_t dim : dims) mask |= 1u << (dim < 0 ? dim + rank : dim);
  return mask;
}

// The one floating dtype among a node's inputs and result, or none when all of them are bool.
// unfusible_reason refuses nodes with any other dtype or with two floating dtypes.
std::optional<DType> floating_dtype(const Graph& graph, const Node& node) {
  for (ValueId output : node.outputs)
    if (is_floating(graph.values[output].meta.dtype)) return graph.values[output].meta.dtype;
  for (ValueId input : node.inputs)
    if (input >= 0 && is_floating(graph.values[input].meta.dtype)) return graph.values[input].meta.dtype;
  return std::nullopt;
}

bool is_reduction_root(const Graph& graph, const Node& node) {
  if (node.op->name != "sum" && node.op->name != "mean") return false;
  if (node.refresh || node.inputs.size() != 1 || node.inputs[0] < 0) return false;
  const TensorMeta& input = graph.values[node.inputs[0]].meta;
  const TensorMeta& output = graph.values[node.outputs[0]].meta;
  return device_reason(input.device).empty() && output.device == input.device && is_floating(input.dtype) &&
         output.dtype == input.dtype;
}

class Fuser {
 public:
  Fuser(const Graph& graph, bool log)
      : graph_(graph), log_(log), group_of_(graph.nodes.size(), -1), moved_(graph.nodes.size(), false) {
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
      if (group_of_[n] >= 0 || moved_[n]) continue;
      const Node& node = graph_.nodes[n];
      const bool reduction = is_reduction_root(graph_, node);
      if (!reduction && !unfusible_reason(graph_, node).empty()) continue;
      std::vector<bool> member(graph_.nodes.size(), false);
      const DType dtype = group_dtype(node, reduction);
      std::vector<int> members = grow(n, reduction, dtype, member);
      const size_t pointwise = members.size() - (reduction ? 1 : 0);
      if (pointwise == 0 || (!reduction && pointwise < 2)) {
        for (int m : members) group_of_[m] = -1;
        continue;
      }
      const int index = static_cast<int>(groups.size());
      std::sort(members.begin(), members.end());
      for (int m : members) {
        group_of_[m] = index;
        std::vector<int> moved;
        (void)outside_reason(graph_.nodes[m].outputs[0], member, n, &moved);
        for (int node_index : moved) moved_[node_index] = true;
      }
      groups.push_back(describe(members, member, reduction, dtype));
    }
    return groups;
  }

 private:
  // What a group being grown holds besides its members: how many values it exports, and the
  // values its members read from outside it (an upper bound of the fused node's inputs).
  struct Growth {
    int exports = 0;
    std::set<ValueId> reads;
  };
  void add_reads(const Node& node, Growth& growth) const {
    for (ValueId input : node.inputs)
      if (input >= 0) growth.reads.insert(input);
  }
  // The group's outside reads if the producer of `value` joined: `value` is then computed inside,
  // and the producer's inputs (each counted once: mul(y, y) reads y once) are read.
  size_t reads_after_join(ValueId value, const Growth& growth) const {
    std::set<ValueId> added;
    for (ValueId input : graph_.nodes[graph_.values[value].index].inputs)
      if (input >= 0 && !growth.reads.contains(input)) added.insert(input);
    return growth.reads.size() - (growth.reads.contains(value) ? 1 : 0) + added.size();
  }

  bool has_outside_user(ValueId value, const std::vector<bool>& member) const {
    return std::any_of(users_[value].begin(), users_[value].end(), [&](int user) { return !member[user]; });
  }

  // The floating dtype a group rooted at `node` computes in: the root's; for a root of bool values
  // only (logical_and of two comparisons), that of the first producer of its inputs that has one.
  DType group_dtype(const Node& node, bool reduction) const {
    if (reduction) return graph_.values[node.inputs[0]].meta.dtype;
    if (const std::optional<DType> own = floating_dtype(graph_, node)) return *own;
    for (ValueId input : node.inputs) {
      if (input < 0 || graph_.values[input].source != ValueSource::NodeOutput) continue;
      if (const std::optional<DType> dtype = floating_dtype(graph_, graph_.nodes[graph_.values[input].index]))
        return *dtype;
    }
    return kFloat32;
  }

  // The group's members grown from `root` through producers until nothing more may join.
  std::vector<int> grow(int root, bool reduction, DType dtype, std::vector<bool>& member) {
    const Node& node = graph_.nodes[root];
    const TensorMeta& shape_source = graph_.values[reduction ? node.inputs[0] : node.outputs[0]].meta;
    std::vector<int> members{root};
    member[root] = true;
    group_of_[root] = -2;  // provisional
    Growth growth;
    add_reads(node, growth);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t m = 0; m < members.size(); ++m)
        for (ValueId input : graph_.nodes[members[m]].inputs) {
          if (!join_reason(input, shape_source, dtype, member, root, growth).empty()) continue;
          const int producer = graph_.values[input].index;
          growth.exports += has_outside_user(input, member) ? 1 : 0;
          growth.reads.erase(input);  // computed inside the group from now on
          add_reads(graph_.nodes[producer], growth);
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
                     join_reason(input, shape_source, dtype, member, root, growth));
        }
    }
    return members;
  }

  // Why the producer of `value` may not join the group, or "" when it may.
  std::string join_reason(ValueId value, const TensorMeta& shape, DType dtype, const std::vector<bool>& member,
                          int root, const Growth& growth) const {
    if (value < 0 || graph_.values[value].source != ValueSource::NodeOutput) return "a graph or state input";
    const int producer = graph_.values[value].index;
    if (member[producer]) return "already in the group";
    if (group_of_[producer] != -1) return "already in another group";
    const std::string unfusible = unfusible_reason(graph_, graph_.nodes[producer]);
    if (!unfusible.empty()) return unfusible;
    const TensorMeta& meta = graph_.values[value].meta;
    if (meta.sizes != shape.sizes || (meta.dtype != dtype && meta.dtype != kBool) || meta.device != shape.device)
      return fmt::format("its result is {} {} on {}, the group iterates {} {} on {}", meta.sizes, meta.dtype,
                         meta.device, shape.sizes, dtype, shape.device);
    const std::optional<DType> computes = floating_dtype(graph_, graph_.nodes[producer]);
    if (computes && *computes != dtype)
      return fmt::format("it computes in {}, the group in {}", *computes, dtype);
    if (escapes_[value]) return "its value is returned, written back, installed as .grad or mutated later";
    // The fused node runs at the root's place: an in-place node in between could change what an
    // input of the producer holds by then.
    if (inplace_before_[root] - inplace_before_[producer + 1] > 0)
      return "an in-place node runs between it and the group's root";
    if (moved_[producer]) return "it reads an output of a later group, so it runs after that group's root";
    const std::string outside = outside_reason(value, member, root, nullptr);
    if (!outside.empty()) return outside;
    if (has_outside_user(value, member) && growth.exports + 1 >= kMaxFusedOutputs)
      return fmt::format("the group already exports {} values, and a fused node has at most {} outputs",
                         growth.exports, kMaxFusedOutputs);
    if (const size_t reads = reads_after_join(value, growth); reads > kMaxFusedInputs)
      return fmt::format("the group would read {} tensors, and a fused node reads at most {}", reads,
                         kMaxFusedInputs);
    return "";
  }

  // Walks the readers of `value` outside the group that run before the root (and what they feed,
  // up to the root): why the value cannot be exported, or "". They would run after the fused node;
  // `moved` collects them. Nodes of groups found earlier run at their roots, after this root.
  std::string outside_reason(ValueId value, const std::vector<bool>& member, int root, std::vector<int>* moved) const {
    std::vector<bool> seen(graph_.nodes.size(), false);
    std::vector<int> stack;
    auto push_users = [&](ValueId of) {
      for (int user : users_[of])
        if (user < root && !member[user] && !seen[user]) {
          seen[user] = true;
          stack.push_back(user);
        }
    };
    push_users(value);
    for (size_t i = 0; i < stack.size(); ++i) {
      const Node& node = graph_.nodes[stack[i]];
      if (group_of_[stack[i]] >= 0) continue;
      if (node.op->kind == OpKind::InPlace || node.refresh)
        return fmt::format("node {} ({}) reads it before the group's root and cannot move after it ({})", stack[i],
                           node.op->name, node.refresh ? "it reads host scalars per call" : "it writes in place");
      for (ValueId output : node.outputs) {
        for (int user : users_[output])
          if (member[user])
            return fmt::format("its value leaves the group through node {} ({}) and re-enters it at node {} ({})",
                               stack[i], node.op->name, user, graph_.nodes[user].op->name);
        push_users(output);
      }
      if (moved != nullptr) moved->push_back(stack[i]);
    }
    return "";
  }

  Grouping describe(const std::vector<int>& members, const std::vector<bool>& member, bool reduction,
                    DType dtype) const {
    Grouping result;
    result.members = members;
    FusedGroup& group = result.group;
    const Node& root = graph_.nodes[members.back()];
    group.output = graph_.values[root.outputs[0]].meta;
    result.outputs.push_back(root.outputs[0]);
    const TensorMeta& iteration = graph_.values[reduction ? root.inputs[0] : root.outputs[0]].meta;
    group.shape = iteration.sizes;
    group.dtype = dtype;
    group.device = iteration.device;
    if (reduction) {
      group.root = root.op->name == "sum" ? FusedRoot::Sum : FusedRoot::Mean;
      group.reduced_dims = reduced_mask(root.attrs.get<Dims>("dims"), group.shape.size());
    }
    std::vector<int> operand_of(graph_.values.size(), -1);  // value -> external input index
    auto internal = [&](ValueId input) {
      return graph_.values[input].source == ValueSource::NodeOutput && member[graph_.values[input].index];
    };
    const size_t pointwise = members.size() - (reduction ? 1 : 0);
    for (size_t i = 0; i < pointwise; ++i)
      for (ValueId input : graph_.nodes[members[i]].inputs) {
        if (internal(input) || operand_of[input] >= 0) continue;
        operand_of[input] = static_cast<int>(result.inputs.size());
        result.inputs.push_back(input);
        group.inputs.push_back(graph_.values[input].meta);
      }
    std::vector<int> step_of(graph_.values.size(), -1);
    for (size_t i = 0; i < pointwise; ++i) {
      const Node& node = graph_.nodes[members[i]];
      std::string unused;
      FusedStep step{node.op->name, functor_expression(*node.op, node.attrs, unused), {},
                     graph_.values[node.outputs[0]].meta.dtype};
      for (ValueId input : node.inputs)
        step.operands.push_back(operand_of[input] >= 0 ? operand_of[input]
                                                       : static_cast<int>(result.inputs.size()) + step_of[input]);
      const ValueId value = node.outputs[0];
      step_of[value] = static_cast<int>(group.steps.size());
      // A pointwise root's value is output 0; any other member read outside is exported.
      const bool is_root = !reduction && i + 1 == pointwise;
      if (!is_root && has_outside_user(value, member)) {
        group.exports.push_back(step_of[value]);
        result.outputs.push_back(value);
      }
      group.steps.push_back(std::move(step));
    }
    return result;
  }

  const Graph& graph_;
  bool log_;
  std::vector<int> group_of_;  // -1: none, -2: provisional, else the group's index
  std::vector<bool> moved_;    // reads a group's export before that group's root: runs after it
  std::vector<std::vector<int>> users_;
  std::vector<bool> escapes_;
  std::vector<int> inplace_before_;  // [n]: in-place nodes among the first n
};

}  // namespace

std::vector<Grouping> find_fusion_groups(const Graph& graph, bool log) { return Fuser(graph, log).find_groups(); }

std::string unfusible_reason(const Graph& graph, const Node& node) {
  const OpDef& op = *node.op;
  if (op.kind != OpKind::Pointwise) return fmt::format("{} is not a pointwise op", op.name);
  if (node.refresh) return fmt::format("{} reads host scalars per call", op.name);
  if (node.outputs.size() != 1) return fmt::format("{} has {} outputs", op.name, node.outputs.size());
  const TensorMeta& output = graph.values[node.outputs[0]].meta;
  if (const std::string reason = device_reason(output.device); !reason.empty())
    return fmt::format("{}: {}", op.name, reason);
  if (!is_floating(output.dtype) && output.dtype != kBool)
    return fmt::format("{} gives {}: a group computes one floating dtype (and bool)", op.name, output.dtype);
  const std::optional<DType> computes = floating_dtype(graph, node);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] < 0) return fmt::format("{} has an absent input {}", op.name, i);
    const TensorMeta& input = graph.values[node.inputs[i]].meta;
    if (input.device != output.device)
      return fmt::format("{} input {} is on {} but its result on {}: a group runs on one device", op.name, i,
                         input.device, output.device);
    const DType dtype = input.dtype;
    if (dtype != kBool && !is_floating(dtype))
      return fmt::format("{} input {} is {}: a group computes one floating dtype (and bool)", op.name, i, dtype);
    if (dtype != kBool && dtype != *computes)  // computes is set: this input is floating
      return fmt::format("{} input {} is {} but {} computes in {}: a group holds one floating dtype", op.name, i,
                         dtype, op.name, *computes);
  }
  std::string reason;
  if (functor_expression(op, node.attrs, reason).empty()) return fmt::format("{}: {}", op.name, reason);
  return "";
}

}  // namespace ember::graph
