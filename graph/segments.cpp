// SegmentCache: compiled segments found by signature, compiled on a miss with the same passes
// and fusion as a full capture, run on the segment's own tensors, results filled afterwards.
#include "graph/segments.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "graph/compile.h"
#include "graph/compile_log.h"
#include "graph/executor.h"
#include "graph/fusion.h"
#include "graph/segment_cost.h"
#include "graph/segment_trace.h"

namespace ember::graph {

struct SegmentCache::Entry {
  Entry(const SegmentTrace& trace, std::vector<bool> changing, std::vector<int> per_run,
        std::shared_ptr<std::vector<Attrs>> per_run_attrs, Graph graph, std::string ended_by)
      : signature(trace.signature),
        hash(trace.hash),
        scalars(trace.scalars),
        changing(std::move(changing)),
        per_run(std::move(per_run)),
        per_run_attrs(std::move(per_run_attrs)),
        executor(std::move(graph)),
        kernels(trace.kernels),
        ended_by(std::move(ended_by)) {}

  // Whether `trace` is this segment: the same structure, and the same floating-point attrs
  // except in the calls whose attrs this one reads at each run.
  bool matches(const SegmentTrace& trace) const {
    if (trace.hash != hash || trace.signature != signature) return false;
    for (size_t k = 0; k < trace.scalars.size(); ++k)
      if (trace.scalars[k] != scalars[k] && !changing[static_cast<size_t>(trace.scalar_calls[k])]) return false;
    return true;
  }

  std::vector<int64_t> signature;
  uint64_t hash;
  std::vector<int64_t> scalars;
  std::vector<bool> changing;  // per call: its floating-point attrs changed between calls
  // The calls whose attrs are set before each run (per_run_calls); the graph's nodes read them
  // through their refresh (SegmentTracer::trace).
  std::vector<int> per_run;
  std::shared_ptr<std::vector<Attrs>> per_run_attrs;
  Executor executor;
  int kernels;
  std::string ended_by;
  int runs = 0;
};

namespace {

Device device_of(const DeferredCall& call) {
  if (call.op != nullptr && call.op->kind == OpKind::Factory) return call.attrs.get<Device>("device");
  for (const Tensor& input : call.inputs)
    if (input.defined()) return input.device();
  return kCPU;
}

bool all_on_cpu(std::span<const DeferredCall> calls) {
  return std::ranges::all_of(calls, [](const DeferredCall& call) { return device_of(call).type == DeviceType::CPU; });
}

// What the dispatcher would have done at each call, now: the same kernels on the same tensors in
// the same order, so the results are eager's bit for bit.
void run_kernels_in_order(std::span<const DeferredCall> calls) {
  for (const DeferredCall& call : calls) {
    if (call.op == nullptr || call.op->kind == OpKind::View) continue;
    TensorList outputs;
    for (int i = 0; i < call.num_outputs; ++i)
      outputs.push_back(call.output_defined[static_cast<size_t>(i)] ? call.output_buffer(i) : Tensor());
    call.op->kernel_for(device_of(call))(OpCall{*call.op, call.inputs, call.attrs}, outputs);
  }
}

// Fills `target` with `value`. A fresh buffer the executor made for this call alone (an output)
// becomes the target's memory, as the target is one too; otherwise the copy kernel copies. Either
// way this is not another write: the target's version was bumped when its op was called, and a
// second bump would make autograd reject it at backward as modified in place.
void fill(const Tensor& target, Tensor value) {
  const TensorImpl& to = *target.impl();
  const TensorImpl& from = *value.impl();
  if (to.storage == from.storage && to.offset == from.offset && to.strides == from.strides) return;  // in place
  const bool whole_buffers = to.offset == 0 && from.offset == 0 && to.sizes == from.sizes && to.strides == from.strides &&
                             to.storage->nbytes() <= from.storage->nbytes() && to.storage->device() == from.storage->device();
  if (whole_buffers && from.storage.use_count() == 1 && value.impl_ptr().use_count() == 1) {
    to.storage->swap_memory(*from.storage);
    return;
  }
  static const OpDef& copy = lookup_op("copy_");
  const Tensor inputs[] = {target, value};
  TensorList outputs{target};
  copy.kernel_for(target.device())(OpCall{copy, inputs, Attrs{}}, outputs);
}

}  // namespace

Tensor DeferredCall::output_buffer(int i) const {
  if (Tensor alive = output(i); alive.defined()) return alive;
  const std::shared_ptr<Storage>& storage = output_storages[static_cast<size_t>(i)];
  internal_assert(storage != nullptr, "segments: a dropped output that allocated no buffer");
  const TensorMeta& meta = output_metas[static_cast<size_t>(i)];
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage;
  impl->sizes = meta.sizes;
  impl->strides = contiguous_strides(meta.sizes, "compiled segment");
  impl->dtype = meta.dtype;
  impl->device = meta.device;
  return Tensor(std::move(impl));
}

void DeferredCall::clear() {
  inputs.clear();
  for (size_t i = 0; i < static_cast<size_t>(num_outputs); ++i) {
    outputs[i].reset();
    output_storages[i].reset();
    output_defined[i] = false;
  }
  num_outputs = 0;
}

SegmentCache::SegmentCache(int limit, bool compile_every_segment)
    : limit_(limit), compile_every_segment_(compile_every_segment), tracer_(std::make_unique<SegmentTracer>()) {}
SegmentCache::~SegmentCache() = default;

std::string SegmentEnd::describe() const {
  return host_read ? fmt::format("{}(){}", what, CallSite::describe()) : std::string(what);
}

bool SegmentCache::unprofitable(const SegmentTrace& trace) const {
  return std::ranges::any_of(unprofitable_, [&](const auto& seen) {
    return seen.first == trace.hash && seen.second == trace.signature;
  });
}

void SegmentCache::run(std::span<const DeferredCall> calls, const SegmentEnd& end, int position) {
  const SegmentTrace* trace = &tracer_->trace(calls);
  Entry* entry = nullptr;
  const Entry* same_structure = nullptr;
  for (const std::unique_ptr<Entry>& candidate : entries_) {
    if (candidate->matches(*trace)) {
      entry = candidate.get();
      break;
    }
    if (candidate->hash == trace->hash && candidate->signature == trace->signature) same_structure = candidate.get();
  }
  const size_t place = static_cast<size_t>(position);
  if (places_.size() <= place) places_.resize(place + 1, Place::Unknown);
  // Why this segment runs kernel by kernel, spelled out only where that decides its place (once
  // per place): a place that compiled before meets such segments at every call.
  const bool undecided = places_[place] == Place::Unknown;
  std::string why_not;
  if (entry == nullptr) {
    if (trace->kernels < 2) {
      if (undecided) why_not = "under two kernels, nothing to compile";
    } else if (unprofitable(*trace)) {
      if (undecided) why_not = "on the CPU compiling it would not pay (seen before)";
    } else if (segments() + static_cast<int>(unprofitable_.size()) >= limit_) {
      if (undecided) why_not = fmt::format("{} segments (the limit) were compiled or found not to pay", limit_);
      if (!limit_logged_) {
        limit_logged_ = true;
        log::event("perf_hints",
                   fmt::format("{} segments (the limit) were compiled or found not to pay: new segments run "
                               "kernel by kernel",
                               limit_),
                   {{"segment_limit", limit_}});
      }
    } else {
      entry = compile(calls, same_structure, end, why_not);  // leaves the tracer holding the same trace
      if (entry == nullptr) unprofitable_.emplace_back(trace->hash, trace->signature);
    }
  }
  if (entry == nullptr) {
    if (!why_not.empty()) run_eagerly_at(position, trace->kernels, end, why_not);
    tracer_->release();
    run_kernels_in_order(calls);
    ++kernel_runs_;
    return;
  }
  places_[place] = Place::Compiled;
  entry->per_run_attrs->clear();
  for (int call : entry->per_run) entry->per_run_attrs->push_back(calls[static_cast<size_t>(call)].attrs);
  std::vector<Tensor> values = entry->executor.run(trace->inputs);
  for (size_t r = 0; r < trace->results.size(); ++r) fill(trace->results[r].target, std::move(values[r]));
  tracer_->release();
  ++entry->runs;
  ++compiled_runs_;
}

void SegmentCache::run_eagerly_at(int position, int kernels, const SegmentEnd& end, const std::string& why) {
  Place& place = places_[static_cast<size_t>(position)];
  if (place != Place::Unknown) return;  // a place that compiled a segment keeps deferring
  place = Place::Eager;
  eager_reasons_.push_back(fmt::format("after {} host reads: {} kernels, ended by {}; {}", position, kernels,
                                       end.describe(), why));
  log::event("graph_breaks",
             fmt::format("the code after {} host reads runs eagerly from now on ({} kernels, ended by {}): {}",
                         position, kernels, end.describe(), why),
             {{"eager_place", position}, {"kernels", kernels}, {"why", why}});
}

SegmentCache::Entry* SegmentCache::compile(std::span<const DeferredCall> calls, const Entry* same_structure,
                                           const SegmentEnd& end, std::string& why_not) {
  const std::string ended_by = end.describe();
  // A segment seen before with other floating-point attrs (a learning rate, a value read on the
  // host) reads the calls whose attrs changed at each run, so that it serves every value.
  std::vector<bool> changing(calls.size(), false);
  if (same_structure != nullptr) {
    const SegmentTrace& seen = tracer_->current();  // run() traced the calls just now
    changing = same_structure->changing;
    for (size_t k = 0; k < seen.scalars.size(); ++k)
      if (seen.scalars[k] != same_structure->scalars[k]) changing[static_cast<size_t>(seen.scalar_calls[k])] = true;
  }
  std::vector<int> per_run = per_run_calls(calls, changing);
  auto per_run_attrs = std::make_shared<std::vector<Attrs>>();
  // Traced again, into a graph: the same trace (the tracer lets go of its handles first, so they
  // do not count as references from outside).
  Graph graph;
  const SegmentTrace& trace = tracer_->trace(calls, &graph, per_run, per_run_attrs);
  verify(graph);
  const int64_t bytes_before = written_bytes(graph);
  run_passes(graph);
  // Decided before fusion compiles anything; a segment of the same structure compiled already.
  std::string pays;
  if (!compile_every_segment_ && same_structure == nullptr && all_on_cpu(calls)) {
    const SegmentPayoff payoff = cpu_segment_payoff(static_cast<int>(calls.size()), bytes_before, graph,
                                                    find_fusion_groups(graph, /*log=*/false));
    if (!payoff.pays()) {
      why_not = "on the CPU compiling it " + payoff.describe();
      return nullptr;
    }
    pays = "; on the CPU it " + payoff.describe();
  }
  fuse_pointwise(graph, {.log = log::enabled("fusion")});
  verify(graph);
  entries_.push_back(std::make_unique<Entry>(trace, std::move(changing), std::move(per_run), std::move(per_run_attrs),
                                             std::move(graph), ended_by));
  Entry& entry = *entries_.back();
  const int read_per_run = static_cast<int>(std::ranges::count(entry.changing, true));
  log::event("graph_breaks",
             fmt::format("compiled segment {}: {} kernels, {} nodes after passes and fusion, ended by {}{}{}",
                         entries_.size() - 1, trace.kernels, entry.executor.graph().nodes.size(), ended_by, pays,
                         read_per_run > 0 ? fmt::format("; the scalars of {} calls changed since the segment was "
                                                        "first compiled and are read at each run", read_per_run)
                                          : ""),
             {{"segment", entries_.size() - 1}, {"kernels", trace.kernels}, {"ended_by", ended_by},
              {"scalars_read_per_run", read_per_run}});
  return &entry;
}

std::vector<SegmentCache::Info> SegmentCache::info() const {
  std::vector<Info> segments;
  for (const std::unique_ptr<Entry>& entry : entries_)
    segments.push_back({&entry->executor, entry->kernels, entry->runs, entry->ended_by});
  return segments;
}

}  // namespace ember::graph
