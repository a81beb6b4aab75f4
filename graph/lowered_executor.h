// The lowered executor: each node resolved once at compile time (kernel for its device, output
// buffers from the memory plan, prebuilt input/output lists) and replayed as a flat step list that
// calls the kernels directly: no dispatcher, no shape rules, no autograd, no per-call allocation
// except the values that escape the call. Returned values get their own allocations. New .grad
// tensors are slices of the arena (PlanOptions::grads_in_arena), which is then one allocation per
// call that the gradients keep alive: a gradient the caller still holds when the next call runs
// keeps its call's arena, and the next call takes a new one, so nothing held is overwritten.
// Under CUDA-graph replay (fixed addresses) the arena is allocated once and gradients apart.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/call_stream_order.h"
#include "graph/cuda_graph_replay.h"
#include "graph/memory_plan.h"

namespace ember::graph {

class LoweredExecutor {
 public:
  // Why `graph` cannot be lowered ("" when it can): a node without a kernel for its device.
  static std::string unsupported_reason(const Graph& graph);

  // Plans memory; the arena is one allocation from the device's caching allocator, made here or,
  // when gradients live in it, per call. With `cuda_graphs` and an arena on a CUDA device, steps
  // are replayed as CUDA graphs.
  explicit LoweredExecutor(const Graph& graph, bool cuda_graphs = false);

  // Runs the steps on `inputs`; `graph` is the graph given to the constructor (its nodes hold the
  // attrs and per-call refreshes, which are updated in place as in the dispatching executor).
  std::vector<Tensor> run(Graph& graph, std::span<const Tensor> inputs);

  const MemoryPlan& plan() const { return plan_; }
  // Whether steps replay as CUDA graphs, and why not when they were asked for but do not.
  bool uses_cuda_graphs() const { return replay_ != nullptr; }
  const std::string& why_no_cuda_graphs() const { return why_no_cuda_graphs_; }
  // The runs of consecutive per-parameter optimizer steps that are launched together as one
  // multi-tensor call (lowered_optimizer_runs.cpp): their lengths, in step order.
  std::vector<int> optimizer_runs() const;

 private:
  enum class StepKind : uint8_t { Compute, InPlace, View };
  struct Step {
    StepKind kind = StepKind::Compute;
    int node = 0;
    Kernel kernel = nullptr;
    std::vector<Tensor> inputs;  // handles to the values' stable TensorImpls
    TensorList outputs;
    // Views: geometry computed once when the base's geometry is fixed (an arena or per-call
    // buffer); views of the caller's tensors re-run the view rule (their strides may differ).
    bool fixed_geometry = false;
    ViewGeometry geometry;
    // Per-parameter optimizer steps (adam_step_, sgd_step_): on the first of a run of consecutive
    // ones, its length and the multi-tensor op that runs them together; 0 on the others; 1 on
    // every other step.
    int run_length = 1;
    const OpDef* multi_op = nullptr;
    Kernel multi_kernel = nullptr;
  };
  // A run of steps: captured as one CUDA graph, or (a node with per-call host scalars) run directly.
  struct Segment {
    size_t begin = 0;
    size_t end = 0;
    bool captured = true;
  };
  struct PerCallBuffer {
    ValueId root;
    size_t bytes;
  };

  void build_values(const Graph& graph);
  void build_steps(const Graph& graph);
  // A handle the caller may keep: a fresh TensorImpl over the same memory (the stable ones are
  // re-pointed by the next call), or the caller's own tensor for inputs and state.
  Tensor escape(ValueId value, std::span<const Tensor> inputs) const;
  void release_call_memory(const Graph& graph);
  std::shared_ptr<Storage> allocate_arena() const;
  // The buffers that outlive a call (the arena; under reduce_overhead the staged inputs and
  // per-call buffers) are used on `stream` too: their free must wait for its work.
  void used_on_stream(const Graph& graph, StreamId stream);
  void release_replaced_grads(const Graph& graph, std::span<const Tensor> inputs);
  void run_steps(Graph& graph, size_t begin, size_t end, bool bump_versions = true);
  void finish_after_error(Graph& graph, std::span<const Tensor> inputs, size_t failed);
  void find_optimizer_runs(const Graph& graph);
  void run_optimizer_run(Graph& graph, size_t first);
  void set_up_cuda_graphs(const Graph& graph);
  std::vector<Tensor> run_cuda_graphs(Graph& graph, std::span<const Tensor> inputs);
  std::vector<Tensor> finish_call(Graph& graph, std::span<const Tensor> inputs, bool clone_outputs);

  MemoryPlan plan_;
  std::shared_ptr<Storage> arena_;
  std::vector<std::shared_ptr<TensorImpl>> impls_;  // per value: stable, re-pointed per call
  std::vector<Value> values_;
  bool poison_ = false;  // EMBER_POISON_OUTPUTS
  std::vector<Step> steps_;
  std::vector<PerCallBuffer> per_call_;
  std::vector<ValueId> view_values_;  // whose storage is re-pointed each call
  std::vector<ValueId> arena_roots_;  // the arena's buffers, re-pointed each call when it is per call
  std::vector<bool> write_back_copies_;  // per write-back: false when the update was in place
  std::vector<const TensorImpl*> sorted_states_;  // the graph's state tensors, sorted by address
  std::vector<Tensor> run_inputs_;       // an optimizer run's flat input list, reused per call
  int failed_node_ = -1;                 // the node whose kernel raised in this call's run_steps
  // reduce_overhead on CUDA (cuda_graph_replay.h): segments, and where each state tensor's data
  // was when captured (its storage, offset and strides; a change means capturing again).
  struct StatePlace {
    const void* storage = nullptr;
    int64_t offset = 0;
    Dims strides;
    bool operator==(const StatePlace&) const = default;
  };
  std::unique_ptr<CudaGraphReplay> replay_;
  CallStreamOrder call_order_;  // a call under another stream waits for the previous call
  std::string why_no_cuda_graphs_;
  std::vector<Segment> segments_;
  std::vector<StatePlace> state_places_;
};

}  // namespace ember::graph
