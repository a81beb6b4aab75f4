// Memory planning: where each graph value's buffer lives when the lowered executor replays the
// graph. Intermediates share ONE arena per graph, a buffer reused once its value (and every alias
// of it) is dead; values that escape the call get their own allocation per call.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ir.h"

namespace ember::graph {

enum class Placement : uint8_t {
  External,   // a graph or state input (or an alias of one): memory the caller owns
  Arena,      // a slice of the graph's arena at a planned offset
  PerCall,    // allocated fresh each call: it escapes (returned or installed as a .grad)
  Undefined,  // an absent optional tensor (an optimizer's missing state buffer)
};

// The buffer of one root value (a value whose node allocates its output) and its live range in
// node indices, inclusive; index nodes.size() stands for the write-backs and outputs after the
// last node.
struct BufferInterval {
  ValueId root = -1;
  int first = 0;
  int last = 0;
  int64_t bytes = 0;
  int64_t offset = -1;  // in the arena, for Placement::Arena
};

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;  // bytes; every arena offset is a multiple
  // Per value: the root whose buffer it uses (itself for allocating nodes and inputs; a view's or
  // an in-place output's root is its base's root), and that buffer's placement.
  std::vector<ValueId> root;
  std::vector<Placement> placement;
  // Per value: true when it reaches its root through a view (its geometry differs from the root's).
  std::vector<bool> through_view;
  std::vector<BufferInterval> buffers;  // one per Arena or PerCall root, by root value id order
  Device arena_device;
  int64_t arena_bytes = 0;     // the one allocation the plan needs
  int64_t unshared_bytes = 0;  // what the arena values would take without reuse (aligned sizes)
};

// Liveness-based greedy placement (largest buffer first, lowest offset that overlaps no live
// buffer). Deterministic: the same graph always gets the same plan.
MemoryPlan plan_memory(const Graph& graph);

// Bytes a value of `meta` occupies, rounded up to MemoryPlan::kAlignment.
int64_t aligned_bytes(const TensorMeta& meta);

}  // namespace ember::graph
