// The executor: replays a captured graph on real tensors, binding state inputs by identity,
// re-reading per-call host scalars and performing the write-backs. Two implementations: the
// lowered step list over a planned arena (lowered_executor.h, the default) and the dispatching
// loop kept for comparison and for graphs the lowered path cannot run yet.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/lowered_executor.h"

namespace ember::graph {

struct ExecutorOptions {
  bool lowered = true;       // false: dispatch every node (also EMBER_EXECUTOR=dispatch)
  bool cuda_graphs = false;  // replay the lowered steps as CUDA graphs (mode "reduce_overhead")
};

class Executor {
 public:
  explicit Executor(Graph graph, ExecutorOptions options = {});
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  ~Executor();

  // Runs the graph on `inputs` (one per graph input) and returns its outputs. Both paths call the
  // same kernels with gradient recording off (the graph already holds the backward), so results
  // are bit-identical to eager execution.
  std::vector<Tensor> run(std::span<const Tensor> inputs);

  const Graph& graph() const { return graph_; }
  // The lowered executor's memory plan; null when the graph runs through the dispatcher.
  const MemoryPlan* memory_plan() const;
  // Why the dispatching loop runs this graph ("" when the lowered executor does).
  const std::string& why_not_lowered() const { return why_not_lowered_; }
  bool uses_cuda_graphs() const { return lowered_ && lowered_->uses_cuda_graphs(); }
  // Why mode="reduce_overhead" runs without CUDA graphs ("" when it uses them or was not asked).
  std::string why_no_cuda_graphs() const { return lowered_ ? lowered_->why_no_cuda_graphs() : why_not_lowered_; }
  // Lengths of the optimizer-step runs launched as one multi-tensor call (lowered executor only).
  std::vector<int> optimizer_runs() const { return lowered_ ? lowered_->optimizer_runs() : std::vector<int>{}; }

 private:
  std::vector<Tensor> run_dispatching(std::span<const Tensor> inputs);
  void keep_after_error(std::span<const Tensor> inputs, size_t failed);

  Graph graph_;
  std::unique_ptr<LoweredExecutor> lowered_;
  std::string why_not_lowered_;
  std::vector<Tensor> slots_;  // the dispatching loop's values, one per value, cleared after each run
};

}  // namespace ember::graph
