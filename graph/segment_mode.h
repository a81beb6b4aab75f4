// SegmentMode: the dispatch mode a compiled function with a graph break runs fn under
// (graph/segments.h). Every op call does its host-side work now and leaves its kernel deferred;
// a host read (item(), to_vector()) or fn's end runs what was deferred as one segment.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/segments.h"

namespace ember::graph {

class SegmentMode final : public DispatchMode {
 public:
  explicit SegmentMode(SegmentCache& cache) : cache_(cache) {}

  // Runs the deferred calls as a segment; `ended_by` says why (a host read, fn's return).
  void flush(const std::string& ended_by);

  TensorList handle(const OpCall& call, const DispatchNext& next) override;
  void on_host_read(const char* what, const Tensor& tensor) override;
  void on_alias(const Tensor& source, const Tensor& alias) override;

 private:
  // A tensor the segment has seen (made, read or aliased), so the trace knows its value.
  bool known(const Tensor& tensor) const { return known_.contains(tensor.impl()); }
  void remember(const Tensor& tensor);
  // `tensor` was made outside the dispatcher over a buffer a deferred call has not filled yet (the
  // alias of a saved tensor autograd makes): it aliases the known tensor with its geometry, which
  // becomes an alias call; else the segment ends first, so the buffer is filled before it is read.
  void resolve_unknown_alias(const Tensor& tensor);

  SegmentCache& cache_;
  std::vector<DeferredCall> calls_;
  std::unordered_set<const TensorImpl*> known_;
  // Buffers deferred kernels will fill, with the known tensors over each (all held by calls_).
  std::unordered_map<const Storage*, std::vector<const TensorImpl*>> pending_;
  bool flushing_ = false;  // the segment's own copies and fallback kernels run now, not deferred
};

}  // namespace ember::graph
