// Shared by the pass tests: capture a one-input function into a Graph without compile(), run
// the compile pipeline's passes on it, and replay a graph on an input.
#pragma once

#include <functional>

#include "graph/capture.h"
#include "graph/executor.h"

namespace ember::graph_test {

inline graph::Graph capture_one(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input) {
  graph::Graph graph;
  graph::CaptureMode mode(graph, /*fullgraph=*/true);
  mode.add_input(input);
  Tensor result;
  {
    DispatchModeGuard installed(mode);
    result = fn(input);
  }
  mode.finish(std::span<const Tensor>(&result, 1));
  graph::verify(graph);
  return graph;
}

inline Tensor replay_one(const graph::Graph& graph, const Tensor& input) {
  graph::Executor executor(graph);
  return executor.run(std::span<const Tensor>(&input, 1)).at(0);
}

}  // namespace ember::graph_test
