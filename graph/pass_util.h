// Helpers the graph passes share (passes.cpp defines them): renumbering after node removal and
// which values must keep a buffer of their own.
#pragma once

#include <vector>

#include "graph/ir.h"

namespace ember::graph {

// After nodes were removed or reordered: point each output value back at its node's new index.
void renumber(Graph& graph);

// Drops the nodes marked in `removed` (one flag per node), keeps the rest in order and renumbers.
// Returns how many were dropped.
int remove_nodes(Graph& graph, const std::vector<bool>& removed);

bool is_mutated_input(const OpDef& op, size_t i);

// The same attribute names in the same order with the same values, doubles compared by their
// bits: two calls that differ only in the sign of a zero (x / 0.0 and x / -0.0) are different.
bool identical_attrs(const Attrs& a, const Attrs& b);

// Values whose buffer must not be shared with another value: mutated in place (directly or
// through a view), returned, or installed as a .grad.
std::vector<bool> pinned_values(const Graph& graph);

}  // namespace ember::graph
