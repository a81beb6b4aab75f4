// What SegmentCache needs from one segment's deferred calls, found in one pass: the signature
// that picks its compiled graph, the tensors that graph reads (the segment's inputs) and the
// tensors to fill afterwards. Given a Graph, the same pass also builds the segment's graph. It
// runs at every call of a function with a graph break, so it keeps its tables between segments.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graph/ir.h"
#include "graph/pointer_index.h"
#include "graph/segments.h"

namespace ember::graph {

// A tensor the code can still reach whose value the segment computed: filled from graph output
// `value` after a run (a result, an activation saved for a later backward, a new .grad), or an
// input the segment updated in place, when the compiled graph did not write it where it lives.
struct SegmentResult {
  ValueId value = -1;
  Tensor target;
};

struct SegmentTrace {
  // The calls' structure: ops, the attrs that are not read per call (floating-point ones only as
  // a marker), how inputs connect, the segment inputs' types, strides and shared buffers, and
  // which values leave the segment.
  std::vector<int64_t> signature;
  uint64_t hash = 0;  // of the signature
  // The floating-point attrs left out of the signature (their bits), and the call of each: a
  // segment compiled with them baked in matches only the same values.
  std::vector<int64_t> scalars;
  std::vector<int> scalar_calls;
  std::vector<Tensor> inputs;          // graph inputs: tensors the segment reads but did not make
  std::vector<SegmentResult> results;  // in the order the values were computed
  int kernels = 0;                     // calls that run a kernel (not views, not aliases)
};

// Which calls a compiled segment reads attrs from at each run, in call order: those with
// per_call_attrs, and those whose floating-point attrs were seen to change (`changing`, by call).
std::vector<int> per_run_calls(std::span<const DeferredCall> calls, const std::vector<bool>& changing);

// Traces segments, keeping its tables between them (a segment is traced at every call).
class SegmentTracer {
 public:
  // Traces `calls`. With `graph`, also records them into it: one graph input per segment input,
  // one node per op call (the node of the k-th of `per_run`'s calls reads its attrs from
  // `(*per_run_attrs)[k]` through its refresh, and is not fused), and the results as graph
  // outputs. The trace stays valid until the next trace() or release().
  const SegmentTrace& trace(std::span<const DeferredCall> calls, Graph* graph = nullptr,
                            const std::vector<int>& per_run = {},
                            const std::shared_ptr<std::vector<Attrs>>& per_run_attrs = nullptr);
  const SegmentTrace& current() const { return trace_; }  // the last trace
  // Drops the trace's handles to the segment's tensors.
  void release();

 private:
  // One live TensorImpl the calls hold (inputs) or made (outputs still held by the code),
  // numbered by `impl_numbers_` in the order first seen.
  struct ImplRecord {
    const TensorImpl* impl = nullptr;
    // A reference to it the calls hold (an input's), else their weak one (an output's): read for
    // its use count, without taking one.
    const std::shared_ptr<TensorImpl>* strong = nullptr;
    const std::weak_ptr<TensorImpl>* weak = nullptr;
    long handles = 0;                  // the calls' (strong) handles, as inputs
    ValueId bound = -1;                // the value it holds now; -1: none yet (a segment input)
    ValueId written_before = -2;       // its value before its first in-place write; -2: never written
  };
  // One buffer those tensors view, or one an allocating call made.
  struct StorageRecord {
    const std::shared_ptr<Storage>* any = nullptr;
    long references = 0;  // held by the records' impls and by the calls' output buffers
    bool produced = false;
    bool reachable = false;
  };
  // An output of an allocating call: filled from `value` when its buffer is reachable.
  struct Produced {
    ValueId value;
    int call;
    int output;
  };
  // The number of `impl`'s record, made when first seen (`strong` or `weak` refers to it).
  int record_of(const TensorImpl* impl, const std::shared_ptr<TensorImpl>* strong,
                const std::weak_ptr<TensorImpl>* weak = nullptr);
  static long use_count(const ImplRecord& record);
  static Tensor tensor_of(const ImplRecord& record);
  StorageRecord* storage_record(const std::shared_ptr<Storage>& storage);
  ValueId value_of(const Tensor& tensor);
  void add_call(const DeferredCall& call, int index);
  void mark_reachable_storages();
  void collect_results();

  SegmentTrace trace_;
  std::span<const DeferredCall> calls_;
  Graph* graph_ = nullptr;
  const std::vector<int>* per_run_ = nullptr;
  std::shared_ptr<std::vector<Attrs>> per_run_attrs_;
  ValueId next_value_ = 0;
  PointerIndex impl_numbers_;
  std::vector<ImplRecord> impls_;
  PointerIndex storage_numbers_;
  std::vector<StorageRecord> storages_;
  std::vector<int> inputs_;  // impl numbers of the segment inputs, in graph input order
  std::vector<Produced> produced_;
  std::vector<int> written_;  // impl numbers of tensors updated in place, first write first
  std::vector<ValueId> call_inputs_;  // the values one call reads
};

}  // namespace ember::graph
