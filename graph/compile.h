// ember::compile(fn, options): a callable that captures fn's whole step (forward, backward,
// optimizer update) into a graph on its first compiled call and replays the graph afterwards.
//
//   auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) {...}, {.fullgraph = true});
//   Tensor loss = train_step(x, y);
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/executor.h"

namespace ember {

struct CompileOptions {
  bool fullgraph = false;  // a graph break throws GraphBreak instead of falling back to eager
  int cache_limit = 8;     // compiled variants kept; past it, calls that miss run eagerly
  // Eager calls before the first capture: they create lazily built state (optimizer moments, a
  // momentum buffer), which the graph then reads as state bound by identity.
  int warmup_calls = 1;
  // Fuse chains of pointwise ops (and a sum/mean at their end) into generated kernels
  // (graph/fusion.h); off to compare with plain replay.
  bool fuse = true;
  // Replay through the lowered step list over a planned arena (graph/lowered_executor.h); false
  // keeps the dispatching executor, for comparison (EMBER_EXECUTOR=dispatch does the same).
  bool lowered = true;
  // "default", or "reduce_overhead": on CUDA, the lowered steps are captured once into CUDA graphs
  // and replayed each call (see LoweredExecutor); on the CPU it changes nothing.
  std::string mode = "default";
};

namespace graph {

// Everything the trace assumed; a call that disagrees recompiles.
struct Guards {
  std::vector<TensorMeta> inputs;
  // Per graph input: the first earlier graph input, else the first state tensor (numbered after
  // the inputs), with the same storage, or -1 (see storage_twin in compile.cpp).
  std::vector<int> input_twins;
  // Host state the captured code branched on (a Dropout's training flag): each must still hold.
  std::vector<HostGuard> host;
  std::vector<TensorMeta> states;  // the bound state tensors' types when captured
  bool grad_mode = true;
  bool autocast = false;  // autocast on, and its dtype: the graph holds the casts it made
  DType autocast_dtype = kBFloat16;
};

// The type-erased state of one compiled function.
class CompiledFunction {
 public:
  explicit CompiledFunction(CompileOptions options) : options_(options) {}

  // `run_eager` runs fn on `inputs` (the same tensors, as fn's parameters).
  Tensor call(const std::vector<Tensor>& inputs, const std::function<Tensor()>& run_eager);

  int captures() const { return static_cast<int>(entries_.size()); }
  int replays() const { return replays_; }
  bool fell_back_to_eager() const { return fell_back_; }
  const std::vector<std::string>& recompile_reasons() const { return recompile_reasons_; }
  // The graph of the newest entry (after passes); null before the first capture.
  const Graph* graph() const { return entries_.empty() ? nullptr : &entries_.back().executor.graph(); }
  // The executor of the newest entry (its memory plan, or why it dispatches); null before capture.
  const Executor* executor() const { return entries_.empty() ? nullptr : &entries_.back().executor; }

 private:
  struct Entry {
    Guards guards;
    Executor executor;
  };
  Tensor capture(const std::vector<Tensor>& inputs, const std::function<Tensor()>& run_eager);
  void fall_back(const std::string& reason);

  CompileOptions options_;
  std::vector<Entry> entries_;
  std::vector<std::string> recompile_reasons_;
  int calls_ = 0;
  int replays_ = 0;
  bool fell_back_ = false;
};

// The pass pipeline ember::compile runs on a captured graph, verify() after each pass: DCE,
// constant folding, algebraic simplification, DCE, unused constants, CSE, GEMM epilogues.
void run_passes(Graph& graph);

// Why `inputs` and the current state fail `guards`, or "" when they pass.
std::string guard_failure(const Guards& guards, const Graph& graph, const std::vector<Tensor>& inputs);

}  // namespace graph

// The callable compile() returns. fn takes tensors and returns one tensor.
template <typename Fn>
class Compiled {
 public:
  Compiled(Fn fn, CompileOptions options)
      : fn_(std::move(fn)), state_(std::make_shared<graph::CompiledFunction>(options)) {}

  template <typename... Args>
  Tensor operator()(const Args&... args) {
    return state_->call({args...}, [&] { return fn_(args...); });
  }
  const graph::CompiledFunction& state() const { return *state_; }

 private:
  Fn fn_;
  std::shared_ptr<graph::CompiledFunction> state_;
};

template <typename Fn>
Compiled<Fn> compile(Fn fn, CompileOptions options = {}) {
  return Compiled<Fn>(std::move(fn), options);
}

}  // namespace ember
