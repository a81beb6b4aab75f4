// CompiledFunction::explain() and the guard descriptions the `guards` log topic prints: what a
// compiled function did and why, in text a user can act on.
#include <fmt/format.h>

#include <algorithm>

#include "graph/compile.h"
#include "graph/compiled_autograd.h"
#include "graph/fusion.h"
#include "graph/segments.h"

namespace ember::graph {

namespace {

std::string dims_text(uint32_t dims) {
  std::string text;
  for (int d = 0; d < 32; ++d)
    if (((dims >> d) & 1u) != 0) text += fmt::format("{}{}", text.empty() ? "" : ", ", d);
  return text;
}

// "15 nodes (2 fused: relu_backward+sum, mul+add), lowered executor, arena 98304 bytes"
std::string describe_executor(const Executor& executor) {
  const std::vector<const FusedOpDef*> fused = fused_ops(executor.graph());
  std::string groups;
  for (const FusedOpDef* op : fused) groups += (groups.empty() ? "" : ", ") + op->group.summary();
  std::string text = fmt::format("{} nodes", executor.graph().nodes.size());
  if (!fused.empty()) text += fmt::format(" ({} fused: {})", fused.size(), groups);
  if (const MemoryPlan* plan = executor.memory_plan())
    return text + fmt::format(", lowered executor, arena {} bytes ({} without reuse){}", plan->arena_bytes,
                              plan->unshared_bytes, executor.uses_cuda_graphs() ? ", replayed as CUDA graphs" : "");
  return text + fmt::format(", dispatching executor ({})", executor.why_not_lowered());
}

}  // namespace

std::string describe_guards(const Guards& guards, std::span<const uint32_t> dynamic_dims) {
  std::string text;
  for (size_t i = 0; i < guards.inputs.size(); ++i) {
    const TensorMeta& input = guards.inputs[i];
    text += fmt::format("{}input {}: {} {} on {}{}", i ? ", " : "", i, input.sizes, input.dtype, input.device,
                        guards.inputs_require_grad[i] ? " requiring grad" : "");
    if (!guards.inputs_contiguous[i]) text += fmt::format(" (non-contiguous, strides {})", guards.inputs_strides[i]);
    if (i < guards.arguments.size() && guards.arguments[i].binding == CapturedArgument::Binding::Pinned)
      text += " (the captured tensor itself: the function also reads it)";
    if (std::find(guards.arguments_without_grad.begin(), guards.arguments_without_grad.end(), i) !=
        guards.arguments_without_grad.end())
      text += " without a .grad";
    if (i < dynamic_dims.size() && (dynamic_dims[i] & all_dims(input.sizes.size())) != 0)
      text += fmt::format(" (dims {} dynamic)", dims_text(dynamic_dims[i] & all_dims(input.sizes.size())));
  }
  for (const SharedMemory& pair : guards.shared_memory) {
    const int inputs = static_cast<int>(guards.inputs.size());
    const char* how = pair.how == Sharing::Same        ? "is"
                      : pair.how == Sharing::SameBytes ? "has the bytes of"
                                                       : "overlaps";
    text += pair.other < inputs ? fmt::format("; input {} {} input {}", pair.input, how, pair.other)
                                : fmt::format("; input {} {} state %s{}", pair.input, how, pair.other - inputs);
  }
  text += fmt::format("; grad mode {}; autocast {}; allow_tf32 {}", guards.grad_mode ? "on" : "off",
                      guards.autocast ? fmt::format("on ({})", guards.autocast_dtype) : "off",
                      guards.allow_tf32 ? "on" : "off");
  text += fmt::format("; {} state tensors (types, grad and owners)", guards.states.size());
  for (const HostGuard& host : guards.host) text += fmt::format("; host: {}", host.what);
  return text;
}

std::string CompiledFunction::explain() const {
  const std::lock_guard<std::recursive_mutex> not_during_a_call(mutex_);
  std::string text = fmt::format(
      "compiled function: {} calls, {} captures, {} replays; {} variants (cache_limit {}), {} captures for new "
      "sizes of dynamic dims, {} entries held\n",
      calls_, captures_made_, replays_, variants(), options_.cache_limit, specializations_, entries_.size());
  std::string dynamic;
  for (size_t i = 0; i < dynamic_dims_.size(); ++i)
    if (dynamic_dims_[i] != 0) dynamic += fmt::format("{}input {} dims {}", dynamic.empty() ? "" : "; ", i, dims_text(dynamic_dims_[i]));
  text += fmt::format("dynamic dims: {}\n", dynamic.empty() ? "none" : dynamic);
  text += fmt::format("recompiles: {}\n", recompile_reasons_.size());
  for (size_t r = 0; r < recompile_reasons_.size(); ++r) text += fmt::format("  {}. {}\n", r + 1, recompile_reasons_[r]);
  text += fmt::format("graph breaks: {}\n", graph_breaks_.size());
  for (size_t b = 0; b < graph_breaks_.size(); ++b) text += fmt::format("  {}. {}\n", b + 1, graph_breaks_[b]);
  text += fmt::format("runs eagerly: {}\n", fell_back_ ? "yes, every call from the fall back on" : "no");
  if (segments_) {
    text += fmt::format("runs as compiled segments: {} calls; {} segments compiled (limit {}), {} segment runs "
                        "compiled, {} kernel by kernel\n",
                        segmented_calls_, segments_->segments(), segments_->limit(), segments_->compiled_runs(),
                        segments_->kernel_runs());
    const std::vector<SegmentCache::Info> segments = segments_->info();
    for (size_t s = 0; s < segments.size(); ++s)
      text += fmt::format("  segment {}: {} kernels, {} runs, ended by {}: {}\n", s, segments[s].kernels,
                          segments[s].runs, segments[s].ended_by, describe_executor(*segments[s].executor));
    for (const std::string& place : segments_->eager_places()) text += fmt::format("  runs eagerly {}\n", place);
  }
  for (size_t e = 0; e < entries_.size(); ++e) {
    const Entry& entry = entries_[e];
    text += fmt::format("entry {} ({}): {}", e, entry.size_specialization ? "new sizes" : "variant",
                        describe_executor(entry.executor));
    if (entry.backward) text += fmt::format("; backward: {}", describe_executor(entry.backward->executor));
    text += fmt::format("\n  guards: {}\n", describe_guards(entry.guards, entry.dynamic_dims));
  }
  return text;
}

}  // namespace ember::graph
