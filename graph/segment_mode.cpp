// SegmentMode: deferring kernels, keeping the deferred calls in order, and ending a segment where
// the code reads a value on the host.
#include "graph/segment_mode.h"

#include <utility>

#include "graph/capture.h"

namespace ember::graph {

void SegmentMode::flush(const std::string& ended_by) {
  if (calls_.empty() || flushing_) return;
  std::vector<DeferredCall> calls = std::exchange(calls_, {});
  known_.clear();
  pending_.clear();
  flushing_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{flushing_};
  cache_.run(calls, ended_by);
}

void SegmentMode::remember(const Tensor& tensor) {
  if (!tensor.defined() || !known_.insert(tensor.impl()).second) return;
  if (const Storage* storage = tensor.impl()->storage.get(); storage != nullptr)
    if (auto buffer = pending_.find(storage); buffer != pending_.end()) buffer->second.push_back(tensor.impl());
}

void SegmentMode::resolve_unknown_alias(const Tensor& tensor) {
  const TensorImpl& wanted = *tensor.impl();
  auto buffer = pending_.find(wanted.storage.get());
  if (buffer == pending_.end()) return;  // memory no deferred call writes: read as it is
  const TensorImpl* same = nullptr;
  for (const TensorImpl* impl : buffer->second)
    if (impl->sizes == wanted.sizes && impl->strides == wanted.strides && impl->offset == wanted.offset &&
        impl->dtype == wanted.dtype)
      same = impl;  // the newest such tensor
  if (same == nullptr) return flush("a tensor made outside the dispatcher over a deferred result");
  // The alias reads what the known tensor holds when the alias is read, as a view would.
  for (const DeferredCall& call : calls_)
    for (const Tensor& held : call.outputs)
      if (held.impl() == same) {
        calls_.push_back({.op = nullptr, .inputs = {held}, .outputs = {tensor}});
        known_.insert(tensor.impl());
        buffer->second.push_back(tensor.impl());
        return;
      }
  flush("a tensor made outside the dispatcher over a deferred result");
}

TensorList SegmentMode::handle(const OpCall& call, const DispatchNext& next) {
  if (flushing_) return next.run(call);
  AttrRefresh refresh = take_attr_refresh();  // the attrs themselves are this call's, read per run
  for (const Tensor& input : call.inputs)
    if (input.defined() && !known(input)) resolve_unknown_alias(input);
  DeferredCall deferred{.op = &call.op,
                        .attrs = call.attrs,
                        .per_call_attrs = refresh != nullptr || draws_random_numbers(call.op),
                        .inputs = {call.inputs.begin(), call.inputs.end()}};
  {
    KernelDeferral defer;
    deferred.outputs = next.run(call);  // an in-place op's saved clone is deferred first, in here
  }
  for (const Tensor& input : call.inputs) remember(input);
  if (call.op.kind != OpKind::View && call.op.kind != OpKind::InPlace)
    for (const Tensor& output : deferred.outputs)
      if (output.defined()) pending_[output.impl()->storage.get()];
  for (const Tensor& output : deferred.outputs) remember(output);
  TensorList outputs = deferred.outputs;
  calls_.push_back(std::move(deferred));
  return outputs;
}

void SegmentMode::on_host_read(const char* what, const Tensor& tensor) {
  if (!flushing_) flush(std::string(what) + "()" + CallSite::describe());
}

void SegmentMode::on_alias(const Tensor& source, const Tensor& alias) {
  if (flushing_ || !known(source)) return;
  calls_.push_back({.op = nullptr, .inputs = {source}, .outputs = {alias}});
  remember(alias);
}

}  // namespace ember::graph
