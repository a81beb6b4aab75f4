// What mode="reduce_overhead" may capture into CUDA graphs, decided from the graph alone (used by
// lowered_cuda_graphs.cpp; plain functions so that tests check them on machines without a GPU).
#pragma once

#include <string>

#include "graph/ir.h"
#include "graph/memory_plan.h"

namespace ember::graph {

// Why no step of `graph` may be captured, or "" when the graph can be. Captured kernels work on
// staged copies of the graph inputs (stable addresses), so an in-place update of a graph input
// would never reach the caller's tensor, and a returned updated input would be the stale one: such
// graphs run on the plain lowered executor instead.
std::string cuda_graph_blocker(const Graph& graph, const MemoryPlan& plan);

// Whether `node` runs directly each call, between captured segments, instead of inside one: nodes
// with host scalars refreshed per call (a capture would freeze them), and copies between host and
// device (to_device synchronizes with the host, which a capture forbids).
bool runs_outside_capture(const Graph& graph, const Node& node);

}  // namespace ember::graph
