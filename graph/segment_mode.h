// SegmentMode: the dispatch mode a compiled function with a graph break runs fn under
// (graph/segments.h). Every op call does its host-side work now and leaves its kernel deferred;
// a host read (item(), to_vector()) or fn's end runs what was deferred as one segment. Where the
// cache says a place in fn runs eagerly (SegmentCache::defers_at), calls there run straight through.
#pragma once

#include <string>

#include "graph/segments.h"

namespace ember::graph {

class SegmentMode final : public DispatchMode {
 public:
  // Defers into `cache`'s buffers (one SegmentMode at a time per cache).
  explicit SegmentMode(SegmentCache& cache);
  ~SegmentMode() override;
  SegmentMode(const SegmentMode&) = delete;
  SegmentMode& operator=(const SegmentMode&) = delete;

  // Runs the deferred calls as a segment; `end` says why (a host read, fn's return).
  void flush(const SegmentEnd& end);

  TensorList handle(const OpCall& call, const DispatchNext& next) override;
  void on_host_read(const char* what, const Tensor& tensor) override;
  void on_alias(const Tensor& source, const Tensor& alias) override;
  bool records() const override { return deferring_; }  // an eager place runs as without a mode

 private:
  bool known(const Tensor& tensor) const;
  void remember(const Tensor& tensor);
  DeferredCall& next_call();  // a reused slot after the open segment's calls
  // Records `outputs` in `call` (weakly; with their buffers when the op `allocated` them).
  static void set_outputs(DeferredCall& call, const TensorList& outputs, bool allocated);
  void clear_segment();  // lets go of the open segment's calls and tables
  void defer_alias(const Tensor& source, const Tensor& alias);  // an alias call: alias reads source
  // `tensor` was made outside the dispatcher over a buffer a deferred call has not filled yet (the
  // alias of a saved tensor autograd makes): it aliases the newest known tensor with its geometry
  // there, recorded as an alias call; with none, the segment ends first, so the buffer is filled
  // before it is read.
  void resolve_unknown_alias(const Tensor& tensor);

  SegmentCache& cache_;
  SegmentBuffers& buffers_;
  bool flushing_ = false;  // the segment's own copies and fallback kernels run now, not deferred
  int position_ = 0;       // host reads so far in this call of fn: where in fn the calls are
  bool deferring_;         // the cache defers calls at position_
};

}  // namespace ember::graph
