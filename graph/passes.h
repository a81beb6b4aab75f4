// Graph passes. Each returns how many nodes it removed and leaves a graph that verify() accepts.
#pragma once

#include "graph/ir.h"

namespace ember::graph {

// Dead-code elimination: drops nodes none of whose outputs reach an output, a write-back or a
// grad write-back. In-place nodes are always kept (a view taken earlier may read their effect).
int eliminate_dead_code(Graph& graph);

// Common-subexpression elimination: a node with the same op, inputs and attributes as an earlier
// one reuses its outputs. Skips in-place nodes, nodes with per-call host scalars, and nodes whose
// outputs (or views of them) are later mutated, returned or become a .grad, since those buffers
// must stay distinct.
int eliminate_common_subexpressions(Graph& graph);

// Per value: true when its buffer must stay its own (CSE may not merge it, fusion may not keep it
// inside a group): mutated in place (directly or through a view), returned, or installed as a .grad.
std::vector<bool> pinned_values(const Graph& graph);

}  // namespace ember::graph
