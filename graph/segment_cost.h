// Whether compiling a segment pays on the CPU (graph/segments.h).
//
// A compiled function with a graph break runs fn's host code at every call (segments.h), so a
// compiled segment cannot save what a full capture saves (dispatch, autograd recording, output
// allocation): on the CPU, where a kernel launch is a function call, it saves only the memory
// traffic its passes and fusion remove (intermediate values that stay in registers, a bias and
// activation folded into a GEMM). Deferring, tracing and filling its calls costs host time at each
// call instead. A segment whose saving is smaller runs eagerly; on CUDA, where each kernel it saves
// is a launch, every segment of two kernels or more is compiled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/fusion_groups.h"
#include "graph/ir.h"

namespace ember::graph {

// What deferring one call costs at each call of fn on the CPU (SegmentMode's bookkeeping, the
// trace, filling the results), and how fast a pass over cached memory moves bytes: measured on
// the seed step with a host read (docs/PERFORMANCE.md, "Compiled segments on the CPU: compiled
// only where they pay").
constexpr double kDeferredCallMicroseconds = 0.5;
constexpr double kCachedBytesPerMicrosecond = 100e3;

// Bytes the graph's nodes write (every output but a view's), as they run eagerly or replay.
int64_t written_bytes(const Graph& graph);

// Bytes of member values `groups` keep in registers: the members' outputs that are not outputs of
// their group.
int64_t bytes_kept_in_registers(const Graph& graph, const std::vector<Grouping>& groups);

struct SegmentPayoff {
  int64_t saved_bytes = 0;       // memory traffic removed: each value no longer written, and read
  double saved_us = 0.0;         // at kCachedBytesPerMicrosecond
  double deferral_us = 0.0;      // calls x kDeferredCallMicroseconds
  bool pays() const { return saved_us > deferral_us; }
  std::string describe() const;  // "saves ~64 KB of memory traffic (~0.6 us) for ~12 us of deferral"
};

// The payoff of a segment of `calls` deferred calls whose graph wrote `bytes_before` before its
// passes and, after them, is `graph` with `groups` to fuse.
SegmentPayoff cpu_segment_payoff(int calls, int64_t bytes_before, const Graph& graph,
                                 const std::vector<Grouping>& groups);

}  // namespace ember::graph
