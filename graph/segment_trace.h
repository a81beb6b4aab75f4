// What SegmentCache needs from one segment's deferred calls, found in one pass: the signature
// that picks its compiled graph, the tensors that graph reads (the segment's inputs) and the
// tensors to fill afterwards. Given a Graph, the same pass also builds the segment's graph.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/ir.h"
#include "graph/segments.h"

namespace ember::graph {

// A tensor the code can still reach whose value the segment computed: filled from graph output
// `value` after a run (a result, an activation saved for a later backward, a new .grad), or an
// input the segment updated in place, when the compiled graph did not write it where it lives.
struct SegmentResult {
  ValueId value = -1;
  Tensor target;
};

struct SegmentTrace {
  // The calls' structure: ops, the attrs that are not read per call (floating-point ones only as
  // a marker), how inputs connect, the segment inputs' types, strides and shared buffers, and
  // which values leave the segment.
  std::vector<int64_t> signature;
  uint64_t hash = 0;  // of the signature
  // The floating-point attrs left out of the signature (their bits), and the call of each: a
  // segment compiled with them baked in matches only the same values.
  std::vector<int64_t> scalars;
  std::vector<int> scalar_calls;
  std::vector<Tensor> inputs;          // graph inputs: tensors the segment reads but did not make
  std::vector<SegmentResult> results;  // in the order the values were computed
  int kernels = 0;                     // calls that run a kernel (not views, not aliases)
};

// Which calls a compiled segment reads attrs from at each run, in call order: those with
// per_call_attrs, and those whose floating-point attrs were seen to change (`changing`, by call).
std::vector<int> per_run_calls(const std::vector<DeferredCall>& calls, const std::vector<bool>& changing);

// Traces `calls`. With `graph`, also records them into it: one graph input per segment input, one
// node per op call (the node of per_run_calls' k-th call reads its attrs from `(*per_run_attrs)[k]`
// through its refresh, and is not fused), and the results as graph outputs.
SegmentTrace trace_segment(const std::vector<DeferredCall>& calls, Graph* graph = nullptr,
                           const std::vector<int>& per_run = {},
                           const std::shared_ptr<std::vector<Attrs>>& per_run_attrs = nullptr);

}  // namespace ember::graph
