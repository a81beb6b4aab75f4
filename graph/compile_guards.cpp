// The guards of a compiled entry (graph/compile_guards.h): what a call must match to replay it
// (guard_failure), and the helpers compile.cpp shares with them (graph/compile_internal.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>

#include "graph/capture.h"
#include "graph/compile.h"
#include "graph/compile_internal.h"
#include "graph/compile_log.h"
#include "runtime/autocast.h"
#include "runtime/cuda_settings.h"
#include "runtime/memory/overlap.h"

namespace ember::graph {

namespace {

std::string autocast_description(bool enabled = autocast_enabled(), DType dtype = autocast_dtype()) {
  return enabled ? fmt::format("on ({})", dtype) : "off";
}

bool same_type(const TensorMeta& a, const TensorMeta& b) {
  return a.sizes == b.sizes && a.dtype == b.dtype && a.device == b.device;
}

// same_type, except that the dims `free` marks may differ in size.
bool same_type(const TensorMeta& a, const TensorMeta& b, uint32_t free) {
  if (free == 0) return same_type(a, b);
  if (a.dtype != b.dtype || a.device != b.device || a.sizes.size() != b.sizes.size()) return false;
  for (int d = 0; d < a.sizes.size(); ++d)
    if (((free >> d) & 1u) == 0 && a.sizes[d] != b.sizes[d]) return false;
  return true;
}

// "input 0 and state %s1 (the same tensor)", the sharers of one input in a pattern.
std::string sharers_text(std::span<const SharedMemory> sharers, size_t inputs) {
  if (sharers.empty()) return "no other input or state";
  std::string text;
  for (const SharedMemory& pair : sharers) {
    if (!text.empty()) text += " and ";
    const int other = pair.other;
    text += other < static_cast<int>(inputs) ? fmt::format("input {}", other)
                                             : fmt::format("state %s{}", other - static_cast<int>(inputs));
    if (pair.how == Sharing::Same) text += " (the same tensor)";
    if (pair.how == Sharing::SameBytes) text += " (another tensor over the same bytes)";
  }
  return text;
}

// The pairs of `pattern` whose input is `input` (the pattern is sorted by input).
std::span<const SharedMemory> sharers_of(const std::vector<SharedMemory>& pattern, int input) {
  const auto begin = std::lower_bound(pattern.begin(), pattern.end(), input,
                                      [](const SharedMemory& pair, int i) { return pair.input < i; });
  auto end = begin;
  while (end != pattern.end() && end->input == input) ++end;
  return {begin, end};
}

// Why `actual` is not the captured pattern: the first input whose sharers differ.
std::string sharing_failure(const std::vector<SharedMemory>& actual, const std::vector<SharedMemory>& captured,
                            size_t inputs) {
  for (int i = 0; i < static_cast<int>(inputs); ++i) {
    const std::span<const SharedMemory> now = sharers_of(actual, i), then = sharers_of(captured, i);
    if (!std::equal(now.begin(), now.end(), then.begin(), then.end()))
      return fmt::format("input {} shares memory with {}, the graph was captured with {}", i, sharers_text(now, inputs),
                         sharers_text(then, inputs));
  }
  return "the inputs share memory otherwise than when captured";
}

}  // namespace

const Storage* storage_of(const TensorImpl& impl) { return impl.storage.get(); }

bool requires_grad(const TensorImpl& impl) { return impl.requires_grad || impl.grad_fn != nullptr; }

HookCount hook_count(const TensorImpl& impl) {
  if (!impl.autograd_meta) return {};
  const std::vector<GradHook>& hooks = impl.autograd_meta->hooks;
  const auto removed = static_cast<size_t>(std::ranges::count_if(hooks, [](const GradHook& hook) { return !hook; }));
  return {.registered = hooks.size(), .removed = removed};
}

std::vector<Tensor> with_grad_inputs(const Graph& graph, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> all = inputs;
  for (const GradInput& grad : graph.grad_inputs)
    all.push_back(Tensor(grad_leaf_tensor(graph, grad.leaf, inputs)).grad());
  return all;
}

bool shares_memory(const Tensor& a, const std::shared_ptr<TensorImpl>& b) {
  // The storages first: the usual answer, without a handle's reference count traffic.
  return storage_of(*a.impl()) == storage_of(*b) && memory_overlap(a, Tensor(b)) != MemoryOverlap::None;
}

int64_t arena_bytes(const Executor& executor) {
  const MemoryPlan* plan = executor.memory_plan();
  return plan == nullptr ? 0 : plan->arena_bytes;
}

namespace {

// The first guard `inputs` fail, or "". Without `explain` a failure is "!", formatted from
// nothing: a call checks every entry it passes over on the way to its own (other sizes, eval
// next to train), and only a call that misses them all needs the reasons.
std::string first_failure(const Guards& guards, const Graph& graph, const std::vector<Tensor>& inputs,
                          std::span<const uint32_t> free_dims, bool explain) {
  auto why = [explain](auto&& format) { return explain ? format() : std::string("!"); };
  if (inputs.size() != guards.inputs.size())
    return why([&] { return fmt::format("expected {} inputs, got {}", guards.inputs.size(), inputs.size()); });
  const size_t callers = inputs.size() - graph.grad_inputs.size();
  for (size_t i = callers; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      return why([&] {
        const GradLeaf& leaf = graph.grad_inputs[i - callers].leaf;
        return fmt::format("the .grad of {}{} is unset, the graph was captured reading it",
                           leaf.argument ? "input " : "state %s", leaf.index);
      });
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) return why([&] { return fmt::format("input {} is undefined", i); });
    const TensorMeta actual = meta_of(inputs[i]);
    if (!same_type(actual, guards.inputs[i], i < free_dims.size() ? free_dims[i] : 0u))
      return why([&] {
        return fmt::format("input {} is {} {} on {}, the graph was captured for {} {} on {}", i, actual.sizes,
                           actual.dtype, actual.device, guards.inputs[i].sizes, guards.inputs[i].dtype,
                           guards.inputs[i].device);
      });
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_contiguous() != guards.inputs_contiguous[i])
      return why([&] {
        return fmt::format("input {} is {}contiguous (strides {}), the graph was captured with a {}contiguous one", i,
                           guards.inputs_contiguous[i] ? "not " : "", inputs[i].strides(),
                           guards.inputs_contiguous[i] ? "" : "non-");
      });
    // With sizes free to change, so are the strides: a capture for the new sizes guards its own.
    const bool sizes_free = i < free_dims.size() && free_dims[i] != 0;
    if (!guards.inputs_contiguous[i] && !sizes_free && inputs[i].strides() != guards.inputs_strides[i])
      return why([&] {
        return fmt::format("input {} has strides {}, the graph was captured with strides {}", i, inputs[i].strides(),
                           guards.inputs_strides[i]);
      });
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].requires_grad() != guards.inputs_require_grad[i])
      return why([&] {
        return fmt::format("input {} {} grad, the graph was captured with it {}", i,
                           inputs[i].requires_grad() ? "requires" : "does not require",
                           guards.inputs_require_grad[i] ? "requiring it" : "not requiring it");
      });
  for (const int i : guards.arguments_without_grad)
    if (current_grad(*inputs[i].impl()) != nullptr)
      return why([&] {
        return fmt::format("input {} has a .grad, the graph was captured with none (it installs the whole gradient, "
                           "where backward adds to a .grad that is there)",
                           i);
      });
  for (size_t i = 0; i < guards.arguments.size(); ++i)
    if (const CapturedArgument& argument = guards.arguments[i];
        argument.binding == CapturedArgument::Binding::Pinned && !argument.holds(*inputs[i].impl()))
      return why([&] {
        return fmt::format("input {} is another tensor than the one the graph was captured with, which the function "
                           "also reads without receiving it (the graph reads both as the argument)",
                           i);
      });
  thread_local std::vector<SharedMemory> pattern;
  memory_sharing(inputs, graph.state_tensors, pattern);
  if (pattern != guards.shared_memory)
    return why([&] { return sharing_failure(pattern, guards.shared_memory, inputs.size()); });
  for (const HostGuard& guard : guards.host)
    if (!guard.holds())
      return why([&] { return fmt::format("the graph was captured with {}, which no longer holds", guard.what); });
  if (grad_mode_enabled() != guards.grad_mode)
    return why([&] {
      return fmt::format("grad mode is {}, the graph was captured with it {}", grad_mode_enabled() ? "on" : "off",
                         guards.grad_mode ? "on" : "off");
    });
  if (autocast_enabled() != guards.autocast || (guards.autocast && autocast_dtype() != guards.autocast_dtype))
    return why([&] {
      return fmt::format("autocast is {}, the graph was captured with {}", autocast_description(),
                         autocast_description(guards.autocast, guards.autocast_dtype));
    });
  if (get_allow_tf32() != guards.allow_tf32)
    return why([&] {
      return fmt::format("allow_tf32 is {}, the graph was captured with it {}", get_allow_tf32() ? "on" : "off",
                         guards.allow_tf32 ? "on" : "off");
    });
  for (size_t i = 0; i < graph.state_tensors.size(); ++i) {
    const std::shared_ptr<TensorImpl>& impl = graph.state_tensors[i];
    // Only the compiled entry still holds it: its owner (a module, an optimizer, a parameter's
    // .grad) replaced or dropped it.
    if (impl.use_count() <= guards.states_entry_refs[i])
      return why([&] { return fmt::format("state %s{} is no longer referenced outside the graph", i); });
    if (const HookCount hooks = hook_count(*impl); hooks != guards.states_hooks[i])
      return why([&] {
        const HookCount& then = guards.states_hooks[i];
        return fmt::format("state %s{} has {} gradient hooks ({} removed), the graph was captured with {} ({} removed)",
                           i, hooks.live(), hooks.removed, then.live(), then.removed);
      });
    const TensorMeta actual{impl->sizes, impl->dtype, impl->device};
    if (!same_type(actual, guards.states[i]))
      return why([&] {
        return fmt::format("state %s{} is now {} {}, captured as {} {}", i, actual.sizes, actual.dtype,
                           guards.states[i].sizes, guards.states[i].dtype);
      });
    if (const bool needs = requires_grad(*impl); needs != guards.states_require_grad[i])
      return why([&] {
        return fmt::format("state %s{} (shape {}) {} grad now, it {} when captured", i, actual.sizes,
                           needs ? "requires" : "does not require", needs ? "did not" : "did");
      });
  }
  return "";
}

}  // namespace

std::string guard_failure(const Guards& guards, const Graph& graph, const std::vector<Tensor>& inputs,
                          std::span<const uint32_t> free_dims) {
  return first_failure(guards, graph, inputs, free_dims, true);
}

bool guards_hold(const Guards& guards, const Graph& graph, const std::vector<Tensor>& inputs,
                 std::span<const uint32_t> free_dims) {
  return first_failure(guards, graph, inputs, free_dims, false).empty();
}

std::string CompiledFunction::miss_reason(const std::vector<Tensor>& inputs) const {
  std::string reason;
  for (const Entry& entry : entries_) {
    const Graph& graph = entry.executor.graph();
    const std::string failure =
        guard_failure(entry.guards, graph, graph.grad_inputs.empty() ? inputs : with_grad_inputs(graph, inputs));
    if (log::enabled("guards"))
      log::event("guards", fmt::format("entry {} does not match: {}", &entry - entries_.data(), failure),
                 {{"entry", &entry - entries_.data()}, {"failure", failure}});
    if (reason.empty()) reason = failure;
  }
  return reason;
}

}  // namespace ember::graph
