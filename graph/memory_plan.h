// Memory planning: where each graph value's buffer lives when the lowered executor replays the
// graph. Intermediates share ONE arena per graph, a buffer reused once its value (and every alias
// of it) is dead; returned values get their own allocation per call. New .grad tensors either get
// their own allocation too, or (PlanOptions::grads_in_arena) a slice of the arena that is live
// from their node to the end of the call, over the space of intermediates that died before them.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ir.h"

namespace ember::graph {

enum class Placement : uint8_t {
  External,   // a graph or state input (or an alias of one): memory the caller owns
  Arena,      // a slice of the graph's arena at a planned offset
  PerCall,    // allocated fresh each call: it escapes (returned, or installed as a .grad)
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
  // Some arena slices escape the call as .grad tensors: the arena must then be a new allocation
  // per call, which those gradients keep alive after it (the next call's would overwrite them).
  bool arena_escapes = false;
};

struct PlanOptions {
  // New .grad tensors that are not also returned go into the arena (see above). Eager frees each
  // intermediate as the backward pass stops needing it and the gradients take its place; with
  // gradients in their own allocations the whole arena is still held while all of them are
  // made, so the step's peak grows by the arena. Off for CUDA-graph replay, whose arena is fixed.
  bool grads_in_arena = false;
};

// Liveness-based greedy placement (largest buffer first, lowest offset that overlaps no live
// buffer). Deterministic: the same graph always gets the same plan.
MemoryPlan plan_memory(const Graph& graph, PlanOptions options = {});

// Bytes a value of `meta` occupies, rounded up to MemoryPlan::kAlignment.
int64_t aligned_bytes(const TensorMeta& meta);

}  // namespace ember::graph
