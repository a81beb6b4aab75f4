// Compiled segments: how a compiled function with a graph break runs (DESIGN.md, compile stage:
// "otherwise the function runs as compiled segments with eager work between them").
//
// A replay of one captured graph cannot stop in the middle to let fn's host code read a value
// (item()) and decide what comes next, and ember has no way to resume a C++ function half-way.
// So a function that broke runs fn itself on every call, under SegmentMode (segment_mode.h): each
// op's host-side work (shape rule, output allocation, autograd recording) happens at the call, as
// in eager mode, but its kernel is deferred. The calls deferred between two breaks (a host read,
// fn's return) are one segment. SegmentCache turns each distinct segment into a graph once (the
// same passes, fusion and lowered executor as a full capture) and replays it on that call's
// tensors; then it fills the tensors the code can still reach from the results.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/pointer_index.h"
#include "runtime/dispatch.h"

namespace ember::graph {

class Executor;
class SegmentTracer;

// One op call whose kernel has not run yet, or (op null) an alias made outside the dispatcher:
// `outputs[0]` is `inputs[0]` without its history (detach()).
struct DeferredCall {
  const OpDef* op = nullptr;
  Attrs attrs;
  // The attrs change from call to call (an optimizer's lr and step count, a random op's generator
  // range): a compiled segment reads them at each run instead of baking them into its kernels.
  bool per_call_attrs = false;
  std::vector<Tensor> inputs;
  TensorList outputs;  // an in-place op's are the mutated inputs themselves
};

// What SegmentMode keeps from one call of the function to the next (it lives in the
// SegmentCache), so that deferring a warm step's calls allocates nothing.
struct SegmentBuffers {
  std::vector<DeferredCall> calls;  // the first `count` are the open segment's
  size_t count = 0;
  PointerIndex known;    // the TensorImpls the open segment has seen (made, read or aliased)
  PointerIndex pending;  // the buffers its deferred kernels will fill
  bool in_use = false;   // a SegmentMode has them
};

class SegmentCache {
 public:
  // At most `limit` distinct segments are compiled; later new ones run kernel by kernel.
  explicit SegmentCache(int limit);
  ~SegmentCache();
  SegmentCache(const SegmentCache&) = delete;
  SegmentCache& operator=(const SegmentCache&) = delete;

  // Runs the kernels of `calls` (deferred in this order): through the compiled segment with their
  // signature, compiled now if there is none yet; kernel by kernel, in order, when there are fewer
  // than two kernels or the limit is reached. `ended_by` says what ended the segment (for logs).
  void run(std::span<const DeferredCall> calls, const std::string& ended_by);
  SegmentBuffers& buffers() { return buffers_; }

  int segments() const { return static_cast<int>(entries_.size()); }  // compiled segments held
  int compiled_runs() const { return compiled_runs_; }  // segments run through a compiled graph
  int kernel_runs() const { return kernel_runs_; }      // segments run kernel by kernel
  int limit() const { return limit_; }
  // Each compiled segment, for explain(): its executor, kernels, runs and what ended it first.
  struct Info {
    const Executor* executor = nullptr;
    int kernels = 0;
    int runs = 0;
    std::string ended_by;
  };
  std::vector<Info> info() const;

 private:
  struct Entry;
  // Compiles the segment of `calls` (traced as `trace`, which is traced again with the graph).
  // `same_structure`: a compiled segment that differs only in floating-point attrs, or null.
  Entry* compile(std::span<const DeferredCall> calls, const Entry* same_structure, const std::string& ended_by);
  int limit_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::unique_ptr<SegmentTracer> tracer_;
  SegmentBuffers buffers_;
  int compiled_runs_ = 0;
  int kernel_runs_ = 0;
  bool limit_logged_ = false;
};

}  // namespace ember::graph
