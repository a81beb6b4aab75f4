// The executor: replays a captured graph as a flat step list on real tensors, binding state
// inputs by identity, re-reading per-call host scalars and performing the write-backs.
#pragma once

#include <span>
#include <vector>

#include "graph/ir.h"

namespace ember::graph {

class Executor {
 public:
  explicit Executor(Graph graph);

  // Runs the graph on `inputs` (one per graph input) and returns its outputs. Each step calls the
  // op through the dispatcher's eager path with gradient recording off (the graph already holds
  // the backward), so results are bit-identical to eager execution.
  std::vector<Tensor> run(std::span<const Tensor> inputs);

  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  std::vector<Tensor> slots_;  // one per value, cleared after each run
};

}  // namespace ember::graph
