// SegmentMode: deferring kernels, keeping the deferred calls in order, and ending a segment where
// the code reads a value on the host.
#include "graph/segment_mode.h"

#include <span>

#include "graph/capture.h"

namespace ember::graph {

SegmentMode::SegmentMode(SegmentCache& cache) : cache_(cache), buffers_(cache.buffers()) {
  check(!buffers_.in_use, "compile: a function with a graph break called itself from inside its own call");
  buffers_.in_use = true;
}

SegmentMode::~SegmentMode() {
  // Normally flushed already; after a failed flush, what is left must not reach the next call.
  for (size_t i = 0; i < buffers_.count; ++i) {
    buffers_.calls[i].inputs.clear();
    buffers_.calls[i].outputs = TensorList();
  }
  buffers_.count = 0;
  buffers_.known.clear();
  buffers_.pending.clear();
  buffers_.in_use = false;
}

DeferredCall& SegmentMode::next_call() {
  if (buffers_.count == buffers_.calls.size()) buffers_.calls.emplace_back();
  return buffers_.calls[buffers_.count++];
}

void SegmentMode::flush(const std::string& ended_by) {
  if (buffers_.count == 0 || flushing_) return;
  flushing_ = true;
  struct Done {
    SegmentMode& mode;
    ~Done() {
      SegmentBuffers& buffers = mode.buffers_;
      for (size_t i = 0; i < buffers.count; ++i) {  // keeps each call's capacity, not its tensors
        buffers.calls[i].inputs.clear();
        buffers.calls[i].outputs = TensorList();
      }
      buffers.count = 0;
      buffers.known.clear();
      buffers.pending.clear();
      mode.flushing_ = false;
    }
  } done{*this};
  cache_.run(std::span<const DeferredCall>(buffers_.calls.data(), buffers_.count), ended_by);
}

void SegmentMode::resolve_unknown_alias(const Tensor& tensor) {
  const TensorImpl& wanted = *tensor.impl();
  if (buffers_.pending.find(wanted.storage.get()) < 0) return;  // memory no deferred call writes: read as it is
  for (size_t i = buffers_.count; i-- > 0;)
    for (const Tensor& known : buffers_.calls[i].outputs) {
      if (!known.defined()) continue;
      const TensorImpl& impl = *known.impl();
      if (impl.storage == wanted.storage && impl.sizes == wanted.sizes && impl.strides == wanted.strides &&
          impl.offset == wanted.offset && impl.dtype == wanted.dtype) {
        // The alias reads what the known tensor holds when the alias is read, as a view would.
        const Tensor source = known;
        DeferredCall& alias = next_call();
        alias.op = nullptr;
        alias.per_call_attrs = false;
        alias.inputs.assign(1, source);
        alias.outputs = TensorList{tensor};
        remember(tensor);
        return;
      }
    }
  flush("a tensor made outside the dispatcher over a deferred result");
}

TensorList SegmentMode::handle(const OpCall& call, const DispatchNext& next) {
  if (flushing_) return next.run(call);
  AttrRefresh refresh = take_attr_refresh();  // the attrs themselves are this call's, read per run
  for (const Tensor& input : call.inputs)
    if (input.defined() && !known(input)) resolve_unknown_alias(input);
  TensorList outputs;
  {
    KernelDeferral defer;
    outputs = next.run(call);  // an in-place op's saved clone is deferred first, in here
  }
  DeferredCall& deferred = next_call();
  deferred.op = &call.op;
  deferred.attrs = call.attrs;
  deferred.per_call_attrs = refresh != nullptr || draws_random_numbers(call.op);
  deferred.inputs.assign(call.inputs.begin(), call.inputs.end());
  deferred.outputs = outputs;
  for (const Tensor& input : call.inputs)
    if (input.defined()) remember(input);
  const bool allocates = call.op.kind != OpKind::View && call.op.kind != OpKind::InPlace;
  for (const Tensor& output : outputs) {
    if (!output.defined()) continue;
    remember(output);
    if (allocates) buffers_.pending.find_or_insert(output.impl()->storage.get());
  }
  return outputs;
}

void SegmentMode::on_host_read(const char* what, const Tensor& tensor) {
  if (!flushing_) flush(std::string(what) + "()" + CallSite::describe());
}

void SegmentMode::on_alias(const Tensor& source, const Tensor& alias) {
  if (flushing_ || !known(source)) return;
  DeferredCall& call = next_call();
  call.op = nullptr;
  call.per_call_attrs = false;
  call.inputs.assign(1, source);
  call.outputs = TensorList{alias};
  remember(alias);
}

}  // namespace ember::graph
