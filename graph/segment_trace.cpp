// trace_segment: one pass over a segment's deferred calls that numbers their values as the graph
// would, so that a segment seen before needs no graph at all: its signature finds the compiled
// one, and the same pass has collected the tensors to run it on and to fill afterwards.
#include "graph/segment_trace.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

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
    signature.push_back(static_cast<int64_t>(std::hash<std::string_view>{}(attrs.name(i))));
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

class Tracer {
 public:
  Tracer(Graph* graph, const std::vector<int>& per_run, const std::shared_ptr<std::vector<Attrs>>& per_run_attrs)
      : graph_(graph), per_run_(per_run), per_run_attrs_(per_run_attrs) {}

  SegmentTrace run(const std::vector<DeferredCall>& calls) {
    for (int index = 0; index < static_cast<int>(calls.size()); ++index) {
      const DeferredCall& call = calls[index];
      for (const Tensor& tensor : call.inputs) hold(tensor);
      for (const Tensor& tensor : call.outputs) hold(tensor);
      if (call.op == nullptr) {
        trace_.signature.push_back(kAliasMark);
        const ValueId source = value_of(call.inputs[0]);
        trace_.signature.push_back(source);
        bound_[call.outputs[0].impl()] = source;
      } else {
        add_call(call, index);
      }
    }
    collect_results();
    trace_.hash = XXH3_64bits(trace_.signature.data(), trace_.signature.size() * sizeof(int64_t));
    return std::move(trace_);
  }

 private:
  // Counts the calls' handles to `tensor`'s impl; the first one is kept (the only reference the
  // tracer itself adds, which reachable_storages() discounts).
  void hold(const Tensor& tensor) {
    if (!tensor.defined()) return;
    auto [entry, first] = held_.try_emplace(tensor.impl(), Held{tensor.impl_ptr(), 0});
    ++entry->second.handles;
    if (first) held_order_.push_back(tensor.impl());
  }
  Tensor handle(const TensorImpl* impl) const { return Tensor(held_.at(impl).impl); }

  // The value `tensor` holds now: bound by an earlier call, or a new segment input.
  ValueId value_of(const Tensor& tensor) {
    if (!tensor.defined()) return -1;
    if (auto found = bound_.find(tensor.impl()); found != bound_.end()) return found->second;
    const TensorImpl& impl = *tensor.impl();
    int twin = -1;  // an earlier input on the same buffer: a write into one changes the other
    for (size_t k = 0; k < input_impls_.size() && twin < 0; ++k)
      if (input_impls_[k]->storage == impl.storage) twin = static_cast<int>(k);
    std::vector<int64_t>& signature = trace_.signature;
    signature.insert(signature.end(), {kInputMark, static_cast<int64_t>(impl.dtype),
                                       static_cast<int64_t>(impl.device.type) * 65536 + impl.device.index,
                                       static_cast<int64_t>(impl.sizes.size()), twin});
    for (int64_t size : impl.sizes) signature.push_back(size);
    for (int64_t stride : impl.strides) signature.push_back(stride);
    const ValueId value = next_value_++;
    if (graph_ != nullptr) {
      internal_assert(graph_->add_input(meta_of(tensor)) == value, "trace_segment: value numbering");
      if (twin >= 0) graph_->shared_buffers.push_back({input_values_[twin], value});
    }
    input_impls_.push_back(&impl);
    input_values_.push_back(value);
    bound_[&impl] = value;
    return value;
  }

  void add_call(const DeferredCall& call, int index) {
    const OpDef& op = *call.op;
    std::vector<int64_t>& signature = trace_.signature;
    signature.push_back(static_cast<int64_t>(std::bit_cast<uintptr_t>(&op)));
    signature.push_back(call.per_call_attrs ? 1 : 0);
    if (!call.per_call_attrs) add_attrs(trace_, index, call.attrs);
    std::vector<ValueId> inputs;
    for (const Tensor& input : call.inputs) inputs.push_back(value_of(input));
    signature.insert(signature.end(), inputs.begin(), inputs.end());
    const ValueId first = next_value_;
    next_value_ += call.outputs.size();
    if (graph_ != nullptr) {
      std::vector<TensorMeta> metas;
      for (const Tensor& output : call.outputs) metas.push_back(output.defined() ? meta_of(output) : TensorMeta{});
      Node& node = graph_->nodes[graph_->add_node(op, call.attrs, std::move(inputs), metas)];
      internal_assert(node.outputs.empty() || node.outputs[0] == first, "trace_segment: value numbering");
      if (auto run = std::ranges::find(per_run_, index); run != per_run_.end())
        node.refresh = [attrs = per_run_attrs_, slot = run - per_run_.begin()](Attrs& current) {
          current = (*attrs)[static_cast<size_t>(slot)];
        };
    }
    if (op.kind != OpKind::View) ++trace_.kernels;
    for (int i = 0; i < call.outputs.size(); ++i) {
      const Tensor& output = call.outputs[i];
      if (!output.defined()) continue;
      if (op.kind == OpKind::InPlace) {
        // The value before the first write: an input (or a view) written but left unchanged by
        // the passes needs no copy.
        if (written_before_.emplace(output.impl(), bound_[output.impl()]).second) written_.push_back(output.impl());
      } else if (op.kind != OpKind::View) {
        produced_.push_back(output.impl());
        produced_storages_.insert(output.impl()->storage.get());
      }
      bound_[output.impl()] = first + i;
    }
  }

  // A buffer the segment filled that something outside the calls can still reach: a tensor the
  // code holds, an alias autograd saved, a .grad. The calls' own handles do not count, nor does
  // a view held only by the calls keeping its base alive (view_origin).
  std::unordered_set<const Storage*> reachable_storages() {
    std::unordered_map<const Storage*, std::pair<long, const std::shared_ptr<Storage>*>> impls_on_storage;
    for (const auto& [impl, held] : held_)
      if (impl->storage) {
        auto& [count, storage] = impls_on_storage[impl->storage.get()];
        ++count;
        storage = &impl->storage;
      }
    std::unordered_set<const Storage*> reachable;
    for (auto impl = held_order_.rbegin(); impl != held_order_.rend(); ++impl) {  // views before their bases
      const Held& held = held_.at(*impl);
      const bool held_elsewhere = held.impl.use_count() - 1 > held.handles;
      if (held_elsewhere && held.impl->storage) reachable.insert(held.impl->storage.get());
      const ViewOrigin* origin = held.impl->view_origin.get();
      if (!held_elsewhere && origin != nullptr)
        if (auto parent = held_.find(origin->parent.get()); parent != held_.end()) ++parent->second.handles;
    }
    for (const auto& [storage, impls] : impls_on_storage)
      if (impls.second->use_count() > impls.first) reachable.insert(storage);
    return reachable;
  }

  void collect_results() {
    const std::unordered_set<const Storage*> reachable = reachable_storages();
    for (const TensorImpl* produced : produced_)
      if (reachable.contains(produced->storage.get())) trace_.results.push_back({bound_[produced], handle(produced)});
    // Written inputs (and views of them): the lowered executor writes them where they live, so the
    // copy after a run is usually skipped; a buffer the segment made is filled through its base.
    for (const TensorImpl* written : written_)
      if (!produced_storages_.contains(written->storage.get()) && bound_[written] != written_before_[written])
        trace_.results.push_back({bound_[written], handle(written)});
    // Filled in computation order: a later write into a shared buffer lands last, as in eager.
    std::stable_sort(trace_.results.begin(), trace_.results.end(),
                     [](const SegmentResult& a, const SegmentResult& b) { return a.value < b.value; });
    trace_.signature.push_back(kResultsMark);
    for (const SegmentResult& result : trace_.results) {
      trace_.signature.push_back(result.value);
      if (graph_ != nullptr) graph_->outputs.push_back(result.value);
    }
    for (const TensorImpl* input : input_impls_) trace_.inputs.push_back(handle(input));
  }

  Graph* graph_;
  const std::vector<int>& per_run_;
  std::shared_ptr<std::vector<Attrs>> per_run_attrs_;
  SegmentTrace trace_;
  ValueId next_value_ = 0;
  std::unordered_map<const TensorImpl*, ValueId> bound_;
  std::vector<const TensorImpl*> input_impls_;  // the segment inputs, in graph input order
  std::vector<ValueId> input_values_;
  struct Held {
    std::shared_ptr<TensorImpl> impl;
    long handles = 0;  // handles the calls hold
  };
  std::unordered_map<const TensorImpl*, Held> held_;  // every impl the calls hold
  std::vector<const TensorImpl*> held_order_;          // first seen first
  std::vector<const TensorImpl*> produced_;            // outputs of kernels that allocated them
  std::unordered_set<const Storage*> produced_storages_;
  std::vector<const TensorImpl*> written_;             // updated in place, first write first
  std::unordered_map<const TensorImpl*, ValueId> written_before_;
};

}  // namespace

std::vector<int> per_run_calls(const std::vector<DeferredCall>& calls, const std::vector<bool>& changing) {
  std::vector<int> per_run;
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].per_call_attrs || (i < changing.size() && changing[i])) per_run.push_back(static_cast<int>(i));
  return per_run;
}

SegmentTrace trace_segment(const std::vector<DeferredCall>& calls, Graph* graph, const std::vector<int>& per_run,
                           const std::shared_ptr<std::vector<Attrs>>& per_run_attrs) {
  return Tracer(graph, per_run, per_run_attrs).run(calls);
}

}  // namespace ember::graph
