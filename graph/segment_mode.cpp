// SegmentMode: deferring kernels, keeping the deferred calls in order, and ending a segment where
// the code reads a value on the host.
#include "graph/segment_mode.h"

#include <span>

#include "graph/capture.h"
#include "graph/ir.h"

namespace ember::graph {

SegmentMode::SegmentMode(SegmentCache& cache)
    : cache_(cache), buffers_(cache.buffers()), deferring_(cache.defers_at(0)) {
  // A compiled function called inside its own call runs inline (CompiledFunction::call).
  internal_assert(!buffers_.in_use, "SegmentMode: two modes over one segment cache");
  buffers_.in_use = true;
}

SegmentMode::~SegmentMode() {
  // Normally flushed already; after a failed flush, what is left must not reach the next call.
  clear_segment();
  buffers_.in_use = false;
}

void SegmentMode::clear_segment() {
  for (size_t i = 0; i < buffers_.count; ++i) buffers_.calls[i].clear();  // keeps each call's capacity
  buffers_.count = 0;
  buffers_.known.clear();
  buffers_.known_impls.clear();
  buffers_.pending.clear();
}

bool SegmentMode::known(const Tensor& tensor) const {
  const int number = buffers_.known.find(tensor.impl());
  if (number < 0) return false;
  // The same object, not a later one at a freed one's address: the same control block.
  const std::weak_ptr<TensorImpl>& seen = buffers_.known_impls[static_cast<size_t>(number)];
  return !seen.owner_before(tensor.impl_ptr()) && !tensor.impl_ptr().owner_before(seen);
}

void SegmentMode::remember(const Tensor& tensor) {
  bool fresh = false;
  const int number = buffers_.known.find_or_insert(tensor.impl(), &fresh);
  if (fresh) {
    buffers_.known_impls.push_back(tensor.impl_ptr());
    return;
  }
  std::weak_ptr<TensorImpl>& seen = buffers_.known_impls[static_cast<size_t>(number)];
  if (seen.owner_before(tensor.impl_ptr()) || tensor.impl_ptr().owner_before(seen)) seen = tensor.impl_ptr();
}

DeferredCall& SegmentMode::next_call() {
  if (buffers_.count == buffers_.calls.size()) buffers_.calls.emplace_back();
  return buffers_.calls[buffers_.count++];
}

void SegmentMode::flush(const SegmentEnd& end) {
  if (buffers_.count == 0 || flushing_) return;
  flushing_ = true;
  struct Done {
    SegmentMode& mode;
    ~Done() {
      mode.clear_segment();
      mode.flushing_ = false;
    }
  } done{*this};
  cache_.run(std::span<const DeferredCall>(buffers_.calls.data(), buffers_.count), end, position_);
  deferring_ = cache_.defers_at(position_);  // the first segment here may have decided
}

void SegmentMode::resolve_unknown_alias(const Tensor& tensor) {
  const TensorImpl& wanted = *tensor.impl();
  if (buffers_.pending.find(wanted.storage.get()) < 0) return;  // memory no deferred call writes: read as it is
  for (size_t i = buffers_.count; i-- > 0;)
    for (int k = 0; k < buffers_.calls[i].num_outputs; ++k) {
      const Tensor known = buffers_.calls[i].output(k);
      if (!known.defined()) continue;
      const TensorImpl& impl = *known.impl();
      if (impl.storage == wanted.storage && impl.sizes == wanted.sizes && impl.strides == wanted.strides &&
          impl.offset == wanted.offset && impl.dtype == wanted.dtype) {
        // The alias reads what the known tensor holds when the alias is read, as a view would.
        defer_alias(known, tensor);
        return;
      }
    }
  flush({"a tensor made outside the dispatcher over a deferred result"});
}

TensorList SegmentMode::handle(const OpCall& call, const DispatchNext& next) {
  // Where the place runs eagerly nothing records, so no refresh was handed over.
  if (flushing_ || !deferring_) return next.run(call);
  AttrRefresh refresh = take_attr_refresh();  // the attrs themselves are this call's, read per run
  for (const Tensor& input : call.inputs)
    if (input.defined() && !known(input)) resolve_unknown_alias(input);
  // That may have ended the segment, and its place may run eagerly from now on.
  if (!deferring_) return next.run(call);
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
  const bool allocates = call.op.kind != OpKind::View && call.op.kind != OpKind::InPlace;
  set_outputs(deferred, outputs, allocates);
  for (const Tensor& input : call.inputs)
    if (input.defined()) remember(input);
  for (const Tensor& output : outputs) {
    if (!output.defined()) continue;
    remember(output);
    if (allocates) buffers_.pending.find_or_insert(output.impl()->storage.get());
  }
  return outputs;
}

void SegmentMode::set_outputs(DeferredCall& call, const TensorList& outputs, bool allocated) {
  call.num_outputs = outputs.size();
  for (int i = 0; i < outputs.size(); ++i) {
    const size_t k = static_cast<size_t>(i);
    const Tensor& output = outputs[i];
    call.output_defined[k] = output.defined();
    if (!output.defined()) {
      call.output_metas[k] = TensorMeta{};
      continue;
    }
    call.outputs[k] = output.impl_ptr();
    call.output_impls[k] = output.impl();
    call.output_metas[k] = meta_of(output);
    if (allocated) call.output_storages[k] = output.impl()->storage;
  }
}

void SegmentMode::on_host_read(const char* what, const Tensor& tensor) {
  if (flushing_) return;
  flush({what, /*host_read=*/true});
  ++position_;
  deferring_ = cache_.defers_at(position_);
}

void SegmentMode::on_alias(const Tensor& source, const Tensor& alias) {
  if (!flushing_ && deferring_ && known(source)) defer_alias(source, alias);
}

void SegmentMode::defer_alias(const Tensor& source, const Tensor& alias) {
  DeferredCall& call = next_call();
  call.op = nullptr;
  call.per_call_attrs = false;
  call.inputs.assign(1, source);
  set_outputs(call, TensorList{alias}, /*allocated=*/false);
  remember(alias);
}

}  // namespace ember::graph
