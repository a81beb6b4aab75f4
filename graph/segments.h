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
// tensors; then it fills the tensors the code can still reach from the results. On the CPU a
// segment that would not pay for its deferral runs eagerly instead (graph/segment_cost.h): later
// calls run the ops at that place in fn, between the same two host reads, straight through.
#pragma once

#include <cstdint>
#include <array>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graph/pointer_index.h"
#include "runtime/dispatch.h"

namespace ember::graph {

class Executor;
class SegmentTracer;
struct SegmentTrace;

// One op call whose kernel has not run yet, or (op null) an alias made outside the dispatcher:
// output 0 is `inputs[0]` without its history (detach()).
struct DeferredCall {
  static constexpr int kMaxOutputs = TensorList::kCapacity;

  const OpDef* op = nullptr;
  Attrs attrs;
  // The attrs change from call to call (an optimizer's lr and step count, a random op's generator
  // range): a compiled segment reads them at each run instead of baking them into its kernels.
  bool per_call_attrs = false;
  std::vector<Tensor> inputs;
  // The outputs are held weakly, so the code lets go of tensors when it would in eager mode and
  // eager's own choices see the same reference counts (autograd steals an unshared gradient
  // instead of copying it). An in-place op's outputs are its mutated inputs.
  int num_outputs = 0;
  std::array<std::weak_ptr<TensorImpl>, kMaxOutputs> outputs;
  std::array<const TensorImpl*, kMaxOutputs> output_impls{};  // to look one up while it lives
  std::array<TensorMeta, kMaxOutputs> output_metas;  // sizes, dtype, device; empty: undefined
  std::array<bool, kMaxOutputs> output_defined{};
  // The buffers of an allocating op's outputs, held until its kernel has run: an output the code
  // dropped may still be read through an alias autograd saved.
  std::array<std::shared_ptr<Storage>, kMaxOutputs> output_storages;

  // Whether output i was defined and the code still holds it (no reference taken).
  bool output_alive(int i) const {
    return output_defined[static_cast<size_t>(i)] && outputs[static_cast<size_t>(i)].use_count() > 0;
  }
  // Output i, or undefined when it was undefined or the code let go of it.
  Tensor output(int i) const {
    std::shared_ptr<TensorImpl> impl = output_defined[static_cast<size_t>(i)] ? outputs[static_cast<size_t>(i)].lock() : nullptr;
    return impl ? Tensor(std::move(impl)) : Tensor();
  }
  // A tensor over output i's buffer with the output's geometry (a fresh contiguous one, as the
  // dispatcher allocated it): the output itself or, when dropped, a new handle to its memory.
  Tensor output_buffer(int i) const;
  void clear();  // lets go of every tensor, keeping the inputs' capacity
};

// What SegmentMode keeps from one call of the function to the next (it lives in the
// SegmentCache), so that deferring a warm step's calls allocates nothing.
struct SegmentBuffers {
  std::vector<DeferredCall> calls;  // the first `count` are the open segment's
  size_t count = 0;
  PointerIndex known;    // the TensorImpls the open segment has seen (made, read or aliased)
  // Per number in `known`: the impl, to tell it from a later one at the same address.
  std::vector<std::weak_ptr<TensorImpl>> known_impls;
  PointerIndex pending;  // the buffers its deferred kernels will fill
  bool in_use = false;   // a SegmentMode has them
};

// What ended a segment: a host read (`what` names it, e.g. "item") or another reason.
struct SegmentEnd {
  const char* what;
  bool host_read = false;
  // "item() at train.cpp:42" (the call site of the read, while it runs), or `what` itself.
  std::string describe() const;
};

class SegmentCache {
 public:
  // At most `limit` distinct segments are compiled or found not to pay (each costs a trace into a
  // graph and the passes); later new ones run kernel by kernel, and a place in fn first met then
  // runs eagerly. `compile_every_segment`: compile CPU segments that would not pay too
  // (CompileOptions).
  SegmentCache(int limit, bool compile_every_segment);
  ~SegmentCache();
  SegmentCache(const SegmentCache&) = delete;
  SegmentCache& operator=(const SegmentCache&) = delete;

  // Runs the kernels of `calls` (deferred in this order, at `position`: after that many host
  // reads in fn): through the compiled segment with their signature, compiled now if there is none
  // yet; kernel by kernel, in order, when there are fewer than two kernels, the limit is reached
  // or, on the CPU, compiling would not pay. `end` says what ended the segment (for logs).
  void run(std::span<const DeferredCall> calls, const SegmentEnd& end, int position);
  // Whether calls at `position` are deferred: not where the first segment there ran kernel by
  // kernel (under two kernels, past the limit, or not paying on the CPU); such a place runs
  // eagerly for good.
  bool defers_at(int position) const {
    return position >= static_cast<int>(places_.size()) || places_[static_cast<size_t>(position)] != Place::Eager;
  }
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
  // The places in fn that run eagerly, for explain(): "after 1 host read: 3 kernels, ended by
  // item() at train.cpp:42; on the CPU it saves ~64 KB of memory traffic (...)".
  const std::vector<std::string>& eager_places() const { return eager_reasons_; }

 private:
  struct Entry;
  enum class Place : uint8_t { Unknown, Compiled, Eager };
  // Compiles the segment of `calls` (tracing it again, into a graph). `same_structure`: a
  // compiled segment that differs only in floating-point attrs, or null. Returns null, compiling
  // nothing, for a CPU segment that would not pay (after recording why in `why_not`).
  Entry* compile(std::span<const DeferredCall> calls, const Entry* same_structure, const SegmentEnd& end,
                 std::string& why_not);
  // Records that the segments at `position` run eagerly from now on (when none compiled there).
  void run_eagerly_at(int position, int kernels, const SegmentEnd& end, const std::string& why);
  bool unprofitable(const SegmentTrace& trace) const;
  int limit_;
  bool compile_every_segment_;
  std::vector<Place> places_;
  std::vector<std::string> eager_reasons_;
  // Signatures of CPU segments found not to pay, so that each is weighed once.
  std::vector<std::pair<uint64_t, std::vector<int64_t>>> unprofitable_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::unique_ptr<SegmentTracer> tracer_;
  SegmentBuffers buffers_;
  int compiled_runs_ = 0;
  int kernel_runs_ = 0;
  bool limit_logged_ = false;
};

}  // namespace ember::graph
