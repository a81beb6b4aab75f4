// SegmentTracer: one pass over a segment's deferred calls that numbers their values as the graph
// would, so that a segment seen before needs no graph at all: its signature finds the compiled
// one, and the same pass has collected the tensors to run it on and to fill afterwards.
#include "graph/segment_trace.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>

#include "runtime/autograd/view_history.h"

namespace ember::graph {

namespace {

// Section markers in the signature; value ids and sizes are never this negative.
constexpr int64_t kInputMark = -1001;
constexpr int64_t kAliasMark = -1002;
constexpr int64_t kResultsMark = -1003;

void add_attrs(SegmentTrace& trace, int call, const Attrs& attrs) {
  std::vector<int64_t>& signature = trace.signature;
  signature.push_back(attrs.size());
  for (int i = 0; i < attrs.size(); ++i) {
    // Names are string literals at the op's call site: the same pointer each call.
    signature.push_back(static_cast<int64_t>(std::bit_cast<uintptr_t>(attrs.name(i))));
    const AttrValue& value = attrs.value(i);
    signature.push_back(static_cast<int64_t>(value.index()));
    if (const double* number = std::get_if<double>(&value)) {
      trace.scalars.push_back(std::bit_cast<int64_t>(*number));
      trace.scalar_calls.push_back(call);
    } else if (const int64_t* integer = std::get_if<int64_t>(&value)) {
      signature.push_back(*integer);
    } else if (const bool* flag = std::get_if<bool>(&value)) {
      signature.push_back(*flag ? 1 : 0);
    } else if (const Dims* dims = std::get_if<Dims>(&value)) {
      signature.push_back(static_cast<int64_t>(dims->size()));
      for (int64_t dim : *dims) signature.push_back(dim);
    } else if (const DType* dtype = std::get_if<DType>(&value)) {
      signature.push_back(static_cast<int64_t>(*dtype));
    } else {
      const Device device = std::get<Device>(value);
      signature.push_back(static_cast<int64_t>(device.type) * 65536 + device.index);
    }
  }
}

}  // namespace

std::vector<int> per_run_calls(std::span<const DeferredCall> calls, const std::vector<bool>& changing) {
  std::vector<int> per_run;
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].per_call_attrs || (i < changing.size() && changing[i])) per_run.push_back(static_cast<int>(i));
  return per_run;
}

const SegmentTrace& SegmentTracer::trace(std::span<const DeferredCall> calls, Graph* graph,
                                         const std::vector<int>& per_run,
                                         const std::shared_ptr<std::vector<Attrs>>& per_run_attrs) {
  release();
  calls_ = calls;
  graph_ = graph;
  per_run_ = &per_run;
  per_run_attrs_ = per_run_attrs;
  for (int index = 0; index < static_cast<int>(calls.size()); ++index) {
    const DeferredCall& call = calls[static_cast<size_t>(index)];
    for (const Tensor& input : call.inputs)
      if (input.defined()) ++impls_[static_cast<size_t>(record_of(input.impl(), &input.impl_ptr()))].handles;
    if (call.op == nullptr) {
      trace_.signature.push_back(kAliasMark);
      const ValueId source = value_of(call.inputs[0]);
      trace_.signature.push_back(source);
      if (call.output_alive(0)) impls_[static_cast<size_t>(record_of(call.output_impls[0], nullptr, &call.outputs[0]))].bound = source;
    } else {
      add_call(call, index);
    }
  }
  collect_results();
  trace_.hash = XXH3_64bits(trace_.signature.data(), trace_.signature.size() * sizeof(int64_t));
  graph_ = nullptr;
  per_run_attrs_.reset();
  return trace_;
}

void SegmentTracer::release() {
  trace_.signature.clear();
  trace_.scalars.clear();
  trace_.scalar_calls.clear();
  trace_.inputs.clear();
  trace_.results.clear();
  trace_.kernels = 0;
  calls_ = {};
  next_value_ = 0;
  impl_numbers_.clear();
  impls_.clear();
  storage_numbers_.clear();
  storages_.clear();
  inputs_.clear();
  produced_.clear();
  written_.clear();
}

int SegmentTracer::record_of(const TensorImpl* impl, const std::shared_ptr<TensorImpl>* strong,
                             const std::weak_ptr<TensorImpl>* weak) {
  bool fresh = false;
  const int number = impl_numbers_.find_or_insert(impl, &fresh);
  if (fresh) impls_.push_back({.impl = impl, .strong = strong, .weak = weak});
  return number;
}

long SegmentTracer::use_count(const ImplRecord& record) {
  return record.strong != nullptr ? record.strong->use_count() : record.weak->use_count();
}

Tensor SegmentTracer::tensor_of(const ImplRecord& record) {
  return Tensor(record.strong != nullptr ? *record.strong : record.weak->lock());
}

SegmentTracer::StorageRecord* SegmentTracer::storage_record(const std::shared_ptr<Storage>& storage) {
  if (!storage) return nullptr;
  bool fresh = false;
  const int number = storage_numbers_.find_or_insert(storage.get(), &fresh);
  if (fresh) storages_.push_back({.any = &storage});
  return &storages_[static_cast<size_t>(number)];
}

// The value `tensor` holds now: bound by an earlier call, or a new segment input.
ValueId SegmentTracer::value_of(const Tensor& tensor) {
  if (!tensor.defined()) return -1;
  const int number = impl_numbers_.find(tensor.impl());  // every input was recorded first
  ImplRecord& record = impls_[static_cast<size_t>(number)];
  if (record.bound >= 0) return record.bound;
  const TensorImpl& impl = *tensor.impl();
  int twin = -1;  // an earlier input on the same buffer: a write into one changes the other
  for (size_t k = 0; k < inputs_.size() && twin < 0; ++k)
    if (impls_[static_cast<size_t>(inputs_[k])].impl->storage == impl.storage) twin = static_cast<int>(k);
  std::vector<int64_t>& signature = trace_.signature;
  signature.insert(signature.end(), {kInputMark, static_cast<int64_t>(impl.dtype),
                                     static_cast<int64_t>(impl.device.type) * 65536 + impl.device.index,
                                     static_cast<int64_t>(impl.sizes.size()), twin});
  for (int64_t size : impl.sizes) signature.push_back(size);
  for (int64_t stride : impl.strides) signature.push_back(stride);
  const ValueId value = next_value_++;
  if (graph_ != nullptr) {
    internal_assert(graph_->add_input(meta_of(tensor)) == value, "SegmentTracer: value numbering");
    if (twin >= 0) graph_->shared_buffers.push_back({graph_->inputs[static_cast<size_t>(twin)], value});
  }
  inputs_.push_back(number);
  record.bound = value;
  return value;
}

void SegmentTracer::add_call(const DeferredCall& call, int index) {
  const OpDef& op = *call.op;
  std::vector<int64_t>& signature = trace_.signature;
  signature.push_back(static_cast<int64_t>(std::bit_cast<uintptr_t>(&op)));
  signature.push_back(call.per_call_attrs ? 1 : 0);
  if (!call.per_call_attrs) add_attrs(trace_, index, call.attrs);
  call_inputs_.clear();
  for (const Tensor& input : call.inputs) call_inputs_.push_back(value_of(input));  // may add segment inputs
  signature.insert(signature.end(), call_inputs_.begin(), call_inputs_.end());
  const ValueId first = next_value_;
  next_value_ += call.num_outputs;
  if (graph_ != nullptr) {
    const std::span<const TensorMeta> metas(call.output_metas.data(), static_cast<size_t>(call.num_outputs));
    Node& node = graph_->nodes[static_cast<size_t>(graph_->add_node(op, call.attrs, call_inputs_, metas))];
    internal_assert(node.outputs.empty() || node.outputs[0] == first, "SegmentTracer: value numbering");
    if (auto run = std::ranges::find(*per_run_, index); run != per_run_->end())
      node.refresh = [attrs = per_run_attrs_, slot = static_cast<size_t>(run - per_run_->begin())](Attrs& current) {
        current = (*attrs)[slot];
      };
  }
  if (op.kind != OpKind::View) ++trace_.kernels;
  const bool allocates = op.kind != OpKind::View && op.kind != OpKind::InPlace;
  for (int i = 0; i < call.num_outputs; ++i) {
    if (!call.output_defined[static_cast<size_t>(i)]) continue;
    if (allocates) produced_.push_back({first + i, index, i});
    if (!call.output_alive(i)) continue;  // dropped by the code: only its buffer may still be read
    const size_t k = static_cast<size_t>(i);
    const int number = record_of(call.output_impls[k], nullptr, &call.outputs[k]);
    ImplRecord& record = impls_[static_cast<size_t>(number)];
    if (op.kind == OpKind::InPlace && record.written_before == -2) {
      // The value before the first write: an input (or a view) written but left unchanged by
      // the passes needs no copy.
      record.written_before = record.bound;
      written_.push_back(number);
    }
    record.bound = first + i;
  }
}

// A buffer the segment filled that something outside the calls can still reach: a tensor the
// code holds, an alias autograd saved, a .grad. The calls' own handles do not count, nor does a
// view held only by the calls keeping its parent alive (view_origin).
void SegmentTracer::mark_reachable_storages() {
  for (const ImplRecord& record : impls_)
    if (StorageRecord* storage = storage_record(record.impl->storage)) ++storage->references;
  for (const Produced& output : produced_) {
    StorageRecord* storage = storage_record(
        calls_[static_cast<size_t>(output.call)].output_storages[static_cast<size_t>(output.output)]);
    storage->produced = true;
    ++storage->references;
  }
  for (auto record = impls_.rbegin(); record != impls_.rend(); ++record) {  // views before their parents
    const bool held_elsewhere = use_count(*record) > record->handles;
    if (held_elsewhere) {
      if (StorageRecord* storage = storage_record(record->impl->storage)) storage->reachable = true;
    } else if (record->impl->view_origin) {
      if (const int parent = impl_numbers_.find(record->impl->view_origin->parent.get()); parent >= 0)
        ++impls_[static_cast<size_t>(parent)].handles;
    }
  }
  for (StorageRecord& storage : storages_)
    if (storage.any->use_count() > storage.references) storage.reachable = true;
}

void SegmentTracer::collect_results() {
  mark_reachable_storages();
  for (const Produced& output : produced_) {
    const DeferredCall& call = calls_[static_cast<size_t>(output.call)];
    const int storage = storage_numbers_.find(call.output_storages[static_cast<size_t>(output.output)].get());
    if (storages_[static_cast<size_t>(storage)].reachable)
      trace_.results.push_back({output.value, call.output_buffer(output.output)});
  }
  // Written inputs (and views of them): the lowered executor writes them where they live, so the
  // copy after a run is usually skipped; a buffer the segment made is filled through its base.
  for (int number : written_) {
    const ImplRecord& record = impls_[static_cast<size_t>(number)];
    const int storage = storage_numbers_.find(record.impl->storage.get());
    const bool produced = storage >= 0 && storages_[static_cast<size_t>(storage)].produced;
    if (!produced && record.bound != record.written_before) trace_.results.push_back({record.bound, tensor_of(record)});
  }
  // Filled in computation order: a later write into a shared buffer lands last, as in eager.
  std::stable_sort(trace_.results.begin(), trace_.results.end(),
                   [](const SegmentResult& a, const SegmentResult& b) { return a.value < b.value; });
  trace_.signature.push_back(kResultsMark);
  for (const SegmentResult& result : trace_.results) {
    trace_.signature.push_back(result.value);
    if (graph_ != nullptr) graph_->outputs.push_back(result.value);
  }
  for (int number : inputs_) trace_.inputs.push_back(tensor_of(impls_[static_cast<size_t>(number)]));
}

}  // namespace ember::graph
