// plan_memory: alias roots (views and in-place outputs share their base's buffer), escape
// analysis, live ranges and the greedy offset assignment into one arena.
//
// Why each rule is conservative:
//  - A view or an in-place output IS its base's buffer, so the root stays live until the last use
//    of any alias (a view read after its base's last direct use keeps the base alive).
//  - Live ranges are inclusive at both ends: an output never shares memory with an input of its
//    own node (kernels may read inputs while writing outputs, element order unknown).
//  - Returned values outlive the call (the caller holds them while the next call runs), so they
//    never live in the arena. Values installed as a .grad outlive it too: they get the arena only
//    when the executor allocates it per call (PlanOptions::grads_in_arena), live to the end.
//  - Write-back values are read by the copy after the last node: live until the end.
//  - Graph and state inputs are the caller's memory; in-place updates of them write there.
#include "graph/memory_plan.h"
#include "graph/pass_util.h"

#include <algorithm>
#include <numeric>

namespace ember::graph {

namespace {

// Roots of every value, through views and in-place outputs; marks absent in-place outputs.
void find_roots(const Graph& graph, MemoryPlan& plan) {
  for (const Node& node : graph.nodes) {
    if (node.op->kind == OpKind::View) {
      const ValueId out = node.outputs[0], base = node.inputs[0];
      plan.root[out] = plan.root[base];
      plan.through_view[out] = true;
    } else if (node.op->kind == OpKind::InPlace) {
      size_t output = 0;
      for (size_t i = 0; i < node.inputs.size() && output < node.outputs.size(); ++i) {
        if (!is_mutated_input(*node.op, i)) continue;
        const ValueId out = node.outputs[output++], base = node.inputs[i];
        if (base < 0) {
          plan.placement[out] = Placement::Undefined;
          continue;
        }
        plan.root[out] = plan.root[base];
        plan.through_view[out] = plan.through_view[base];
      }
    }
  }
}

// Greedy: largest first, each at the lowest aligned offset clear of every placed buffer whose
// live range overlaps its own. The placed buffers are kept in offset order, so finding that gap
// is one pass over them, with no sort per buffer: thousands of gradients that all live to the
// end of the step must not make planning cost B^2 log B.
int64_t assign_offsets(std::vector<BufferInterval*>& arena) {
  std::stable_sort(arena.begin(), arena.end(), [](const BufferInterval* a, const BufferInterval* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  int64_t total = 0;
  std::vector<const BufferInterval*> placed;  // by offset
  for (BufferInterval* buffer : arena) {
    int64_t offset = 0;
    for (const BufferInterval* other : placed) {
      if (other->last < buffer->first || buffer->last < other->first) continue;  // never live together
      if (offset + buffer->bytes <= other->offset) break;  // fits in the gap before `other`
      offset = std::max(offset, other->offset + other->bytes);
    }
    buffer->offset = offset;
    total = std::max(total, offset + buffer->bytes);
    const auto after = std::upper_bound(placed.begin(), placed.end(), offset,
                                        [](int64_t at, const BufferInterval* other) { return at < other->offset; });
    placed.insert(after, buffer);
  }
  return total;
}

}  // namespace

int64_t aligned_bytes(const TensorMeta& meta) {
  const int64_t bytes = meta.sizes.product() * static_cast<int64_t>(element_size(meta.dtype));
  return (bytes + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment;
}

MemoryPlan plan_memory(const Graph& graph, PlanOptions options) {
  const size_t count = graph.values.size();
  const int end = static_cast<int>(graph.nodes.size());
  MemoryPlan plan;
  plan.root.resize(count);
  std::iota(plan.root.begin(), plan.root.end(), 0);
  plan.placement.assign(count, Placement::Arena);
  plan.through_view.assign(count, false);
  for (size_t v = 0; v < count; ++v)
    if (graph.values[v].source != ValueSource::NodeOutput) plan.placement[v] = Placement::External;
  find_roots(graph, plan);

  std::vector<bool> escapes(count, false), new_grads(count, false);
  for (ValueId output : graph.outputs) escapes[plan.root[output]] = true;
  for (const GradWriteBack& write : graph.grad_write_backs)
    if (write.value >= 0) (options.grads_in_arena ? new_grads : escapes)[plan.root[write.value]] = true;

  // Live ranges of roots: from the defining node to the last node (or the end) using an alias.
  std::vector<int> first(count, -1), last(count, -1);
  for (int n = 0; n < end; ++n) {
    const Node& node = graph.nodes[n];
    for (ValueId input : node.inputs)
      if (input >= 0) last[plan.root[input]] = std::max(last[plan.root[input]], n);
    for (ValueId output : node.outputs) {
      const ValueId root = plan.root[output];
      if (first[root] < 0) first[root] = n;
      last[root] = std::max(last[root], n);
    }
  }
  for (const WriteBack& write : graph.write_backs) last[plan.root[write.value]] = end;
  for (ValueId output : graph.outputs) last[plan.root[output]] = end;
  for (size_t v = 0; v < count; ++v)
    if (new_grads[v]) last[v] = end;

  // The arena lives on the device of the first planned value; values elsewhere go per call.
  bool have_device = false;
  for (size_t v = 0; v < count; ++v) {
    if (plan.root[v] != static_cast<ValueId>(v) || plan.placement[v] != Placement::Arena) continue;
    const TensorMeta& meta = graph.values[v].meta;
    if (!have_device) {
      plan.arena_device = meta.device;
      have_device = true;
    }
    if (escapes[v] || meta.device != plan.arena_device) plan.placement[v] = Placement::PerCall;
    else if (new_grads[v]) plan.arena_escapes = true;
    plan.buffers.push_back({static_cast<ValueId>(v), first[v], last[v], aligned_bytes(meta), -1});
  }
  std::vector<BufferInterval*> arena;
  for (BufferInterval& buffer : plan.buffers) {
    if (plan.placement[buffer.root] != Placement::Arena) continue;
    arena.push_back(&buffer);
    plan.unshared_bytes += buffer.bytes;
  }
  plan.arena_bytes = assign_offsets(arena);
  for (size_t v = 0; v < count; ++v)
    if (plan.placement[v] != Placement::Undefined) plan.placement[v] = plan.placement[plan.root[v]];
  return plan;
}

}  // namespace ember::graph
