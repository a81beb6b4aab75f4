// Internal to the fusion pass: the groups graph/fusion.cpp finds, handed to the rewrite in
// graph/fusion_rewrite.cpp (which compiles them and replaces their nodes).
#pragma once

#include <vector>

#include "graph/fusion.h"

namespace ember::graph {

struct Grouping {
  std::vector<int> members;   // node indices, ascending; the last one is the root
  std::vector<ValueId> inputs;   // the fused node's inputs, in the group's operand order
  std::vector<ValueId> outputs;  // the root's value, then the exported member values
  FusedGroup group;
};

// The groups of `graph` (see the rule at the top of fusion.cpp). `log` prints every neighbour
// left out and why.
std::vector<Grouping> find_fusion_groups(const Graph& graph, bool log);

}  // namespace ember::graph
