// fuse_pointwise: compiles the groups graph/fusion.cpp found (the CPU ones into one library, the
// CUDA ones into one NVRTC program) and replaces each group by one node (at its root's place)
// whose outputs are the root's value and the exports; nodes that read an export before the root
// move after the fused node.
#include <algorithm>

#include <fmt/format.h>

#include "graph/codegen_cpp.h"
#include "graph/compile_log.h"
#include "graph/fusion.h"
#include "graph/fusion_groups.h"
#ifdef EMBER_HAS_CUDA
#include "graph/cuda/fused_cuda_program.h"
#endif

namespace ember::graph {

namespace {

std::shared_ptr<FusedOpDef> fused_op(const FusedGroup& group) {
  auto def = std::make_shared<FusedOpDef>();
  def->group = group;
  def->name = group.name;
  def->kind = group.root == FusedRoot::None ? OpKind::Pointwise : OpKind::Reduction;
  def->num_outputs = 1 + static_cast<int>(group.exports.size());
  def->schema = group.summary();
  def->infer = fused_shape;
  return def;
}

// Compiles the groups on `device_type` into one module or program and gives each its OpDef in
// `defs`. A compiler that fails is an environment problem, not the user's: those groups stay
// unfused (their defs stay null) and the reason is printed.
void compile_groups(const std::vector<Grouping>& groups, DeviceType device_type,
                    std::vector<std::shared_ptr<FusedOpDef>>& defs) {
  std::vector<const FusedGroup*> descriptions;
  for (const Grouping& grouping : groups)
    if (grouping.group.device.type == device_type) descriptions.push_back(&grouping.group);
  if (descriptions.empty()) return;
  try {
    if (device_type == DeviceType::CPU) {
      std::shared_ptr<CompiledModule> module = compile_cpu_module(emit_module_source(descriptions, Target::Cpu), log::enabled("output_code"));
      for (size_t g = 0; g < groups.size(); ++g) {
        if (groups[g].group.device.type != device_type) continue;
        defs[g] = fused_op(groups[g].group);
        defs[g]->kernels[static_cast<int>(DeviceType::CPU)] = fused_cpu_kernel;
        defs[g]->module = module;
        defs[g]->function = module->symbol(defs[g]->name);
      }
      return;
    }
#ifdef EMBER_HAS_CUDA
    std::shared_ptr<FusedCudaProgram> program = compile_fused_cuda_program(descriptions, log::enabled("output_code"));
    for (size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].group.device.type != device_type) continue;
      defs[g] = fused_op(groups[g].group);
      defs[g]->kernels[static_cast<int>(DeviceType::CUDA)] = fused_cuda_kernel;
      defs[g]->cuda = program;
    }
#endif
  } catch (const Error& error) {
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].group.device.type == device_type) defs[g] = nullptr;
    fmt::print(stderr, "[ember fusion] running {} groups unfused: {}\n",
               device_type == DeviceType::CPU ? "CPU" : "CUDA", error.what());
  }
}

// Keeps the node order except that a node whose inputs are not computed yet (it reads an export
// of a fused node placed later) waits, and runs as soon as they are, in its original order.
std::vector<Node> schedule(const Graph& graph, std::vector<Node> nodes) {
  std::vector<bool> defined(graph.values.size(), false);
  for (size_t v = 0; v < graph.values.size(); ++v) defined[v] = graph.values[v].source != ValueSource::NodeOutput;
  auto ready = [&](const Node& node) {
    return std::all_of(node.inputs.begin(), node.inputs.end(),
                       [&](ValueId input) { return input < 0 || defined[input]; });
  };
  std::vector<Node> order;
  std::vector<Node> waiting;
  auto emit = [&](Node node) {
    for (ValueId output : node.outputs) defined[output] = true;
    order.push_back(std::move(node));
  };
  for (Node& node : nodes) {
    if (!ready(node)) {
      waiting.push_back(std::move(node));
      continue;
    }
    emit(std::move(node));
    for (size_t w = 0; w < waiting.size();) {
      if (!ready(waiting[w])) {
        ++w;
        continue;
      }
      emit(std::move(waiting[w]));
      waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(w));
      w = 0;  // an earlier waiting node may read what this one made
    }
  }
  internal_assert(waiting.empty(), "fusion: a node waits for a value no node computes");
  return order;
}

// Bit d set where shape[d] is one of `dynamic_sizes`.
uint32_t dynamic_dims(const Dims& shape, const std::vector<int64_t>& dynamic_sizes) {
  uint32_t mask = 0;
  for (int d = 0; d < shape.size(); ++d)
    if (std::find(dynamic_sizes.begin(), dynamic_sizes.end(), shape[d]) != dynamic_sizes.end()) mask |= 1u << d;
  return mask;
}

// FusionOptions::reference_groups: only when every group matches its reference in op chain and
// rank (the same code at other sizes), dims of other sizes are dynamic.
void mark_differing_dims(std::vector<Grouping>& groups, const std::vector<std::pair<std::string, Dims>>& reference) {
  if (reference.size() != groups.size()) return;
  for (size_t g = 0; g < groups.size(); ++g)
    if (groups[g].group.summary() != reference[g].first || groups[g].group.shape.size() != reference[g].second.size())
      return;
  for (size_t g = 0; g < groups.size(); ++g) {
    FusedGroup& group = groups[g].group;
    for (int d = 0; d < group.shape.size(); ++d)
      if (group.shape[d] != reference[g].second[d]) group.dynamic_dims |= 1u << d;
  }
}

}  // namespace

std::vector<std::pair<std::string, Dims>> reference_groups(const Graph& graph) {
  std::vector<std::pair<std::string, Dims>> groups;
  for (const FusedOpDef* op : fused_ops(graph)) groups.emplace_back(op->group.summary(), op->group.shape);
  return groups;
}

int fuse_pointwise(Graph& graph, const FusionOptions& options) {
  std::vector<Grouping> groups = find_fusion_groups(graph, options.log);
  if (groups.empty()) return 0;
  // Named in execution order, so the dump reads fused_0, fused_1, ... from top to bottom.
  std::sort(groups.begin(), groups.end(),
            [](const Grouping& a, const Grouping& b) { return a.members.back() < b.members.back(); });
  const int first = static_cast<int>(graph.owned_ops.size());
  for (size_t g = 0; g < groups.size(); ++g) groups[g].group.name = fmt::format("fused_{}", first + static_cast<int>(g));
  for (Grouping& grouping : groups) grouping.group.dynamic_dims = dynamic_dims(grouping.group.shape, options.dynamic_sizes);
  mark_differing_dims(groups, options.reference_groups);
  std::vector<std::shared_ptr<FusedOpDef>> defs(groups.size());
  compile_groups(groups, DeviceType::CPU, defs);
  compile_groups(groups, DeviceType::CUDA, defs);
  std::vector<int> replaced_by(graph.nodes.size(), -1);  // root node -> group index
  std::vector<bool> removed(graph.nodes.size(), false);
  int fused = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!defs[g]) continue;
    ++fused;
    for (int m : groups[g].members) removed[m] = true;
    replaced_by[groups[g].members.back()] = static_cast<int>(g);
  }
  std::vector<Node> nodes;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (replaced_by[n] >= 0) {
      Grouping& grouping = groups[replaced_by[n]];
      std::shared_ptr<FusedOpDef> def = defs[replaced_by[n]];
      if (options.log) {
        std::string exported;
        for (size_t e = 1; e < grouping.outputs.size(); ++e)
          exported += fmt::format("{}%{}", e > 1 ? ", " : "", grouping.outputs[e]);
        const Device device = def->group.device;
        fmt::print(stderr, "[ember fusion] {}: {} over {} {}{} ({} inputs; outputs %{}{}{})\n", def->name, def->schema,
                   def->group.shape, def->group.dtype, device.is_cpu() ? "" : fmt::format(" on {}", device),
                   grouping.inputs.size(), grouping.outputs[0], exported.empty() ? "" : ", exported: ", exported);
      }
      nodes.push_back(Node{def.get(), {}, grouping.inputs, grouping.outputs, {}});
      for (int m : groups[replaced_by[n]].members) {  // the first member's line stands for the group
        if (!nodes.back().call_site) nodes.back().call_site = graph.nodes[m].call_site;
        if (nodes.back().captured_at < 0) nodes.back().captured_at = graph.nodes[m].captured_at;
      }
      graph.owned_ops.push_back(std::move(def));
    } else if (!removed[n]) {
      nodes.push_back(std::move(graph.nodes[n]));
    }
  }
  graph.nodes = schedule(graph, std::move(nodes));
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (size_t k = 0; k < graph.nodes[n].outputs.size(); ++k) {
      graph.values[graph.nodes[n].outputs[k]].index = static_cast<int>(n);
      graph.values[graph.nodes[n].outputs[k]].output = static_cast<int>(k);
    }
  return fused;
}

}  // namespace ember::graph
