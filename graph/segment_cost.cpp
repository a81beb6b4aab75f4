// The CPU payoff of compiling a segment (segment_cost.h).
#include "graph/segment_cost.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/memory_plan.h"

namespace ember::graph {

namespace {

// As the memory plan sizes a value (rounded up to its alignment).
int64_t bytes_of(const Value& value) { return aligned_bytes(value.meta); }

}  // namespace

int64_t written_bytes(const Graph& graph) {
  int64_t bytes = 0;
  for (const Node& node : graph.nodes) {
    if (node.op->kind == OpKind::View) continue;  // an alias: nothing written
    for (ValueId output : node.outputs)
      if (output >= 0) bytes += bytes_of(graph.values[static_cast<size_t>(output)]);
  }
  return bytes;
}

int64_t bytes_kept_in_registers(const Graph& graph, const std::vector<Grouping>& groups) {
  int64_t bytes = 0;
  for (const Grouping& grouping : groups)
    for (int member : grouping.members)
      for (ValueId output : graph.nodes[static_cast<size_t>(member)].outputs)
        if (output >= 0 && std::ranges::find(grouping.outputs, output) == grouping.outputs.end())
          bytes += bytes_of(graph.values[static_cast<size_t>(output)]);
  return bytes;
}

std::string SegmentPayoff::describe() const {
  return fmt::format("saves ~{:.0f} KB of memory traffic (~{:.1f} us) for ~{:.1f} us of deferral", saved_bytes / 1e3,
                     saved_us, deferral_us);
}

SegmentPayoff cpu_segment_payoff(int calls, int64_t bytes_before, const Graph& graph,
                                 const std::vector<Grouping>& groups) {
  SegmentPayoff payoff;
  const int64_t bytes_after = written_bytes(graph) - bytes_kept_in_registers(graph, groups);
  // A value no longer written is not read back either.
  payoff.saved_bytes = 2 * std::max<int64_t>(0, bytes_before - bytes_after);
  payoff.saved_us = static_cast<double>(payoff.saved_bytes) / kCachedBytesPerMicrosecond;
  payoff.deferral_us = calls * kDeferredCallMicroseconds;
  return payoff;
}

}  // namespace ember::graph
