// The guards of a compiled entry: what a call must match to replay it (guard_failure), and the
// helpers compile.cpp shares with them (graph/compile_internal.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

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

std::string sharer_text(int twin, size_t inputs) {
  if (twin < 0) return "no other input or state";
  if (twin < static_cast<int>(inputs)) return fmt::format("input {}", twin);
  return fmt::format("state %s{}", twin - static_cast<int>(inputs));
}

}  // namespace

const Storage* storage_of(const TensorImpl& impl) { return impl.storage.get(); }

bool requires_grad(const TensorImpl& impl) { return impl.requires_grad || impl.grad_fn != nullptr; }

size_t hook_count(const TensorImpl& impl) { return impl.autograd_meta ? impl.autograd_meta->hooks.size() : 0; }

std::vector<Tensor> with_grad_inputs(const Graph& graph, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> all = inputs;
  for (const GradInput& grad : graph.grad_inputs) all.push_back(Tensor(graph.state_tensors[grad.leaf]).grad());
  return all;
}

bool shares_memory(const Tensor& a, const std::shared_ptr<TensorImpl>& b) {
  // The storages first: the usual answer, without a handle's reference count traffic.
  return storage_of(*a.impl()) == storage_of(*b) && memory_overlap(a, Tensor(b)) != MemoryOverlap::None;
}

void memory_twins(const std::vector<Tensor>& inputs, const std::vector<std::shared_ptr<TensorImpl>>& states,
                  std::vector<int>& twins) {
  // Only tensors over one storage can share bytes: the inputs sorted by storage, then each state
  // looked up among them, costs O((inputs + states) log inputs), not inputs x states per call (an
  // optimizer step compiled alone reads every parameter's .grad as an input). Candidates are
  // tried in index order, so the twin is the first earlier input, else the first state.
  thread_local std::vector<std::pair<const Storage*, int>> by_storage;
  by_storage.clear();
  twins.assign(inputs.size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (const Storage* storage = storage_of(*inputs[i].impl()); storage != nullptr)
      by_storage.emplace_back(storage, static_cast<int>(i));
  std::sort(by_storage.begin(), by_storage.end());
  for (size_t a = 0; a < by_storage.size(); ++a)
    for (size_t b = a; b-- > 0 && by_storage[b].first == by_storage[a].first;) {
      const int earlier = by_storage[b].second;  // b counts down: the earliest match wins
      if (shares_memory(inputs[by_storage[a].second], inputs[earlier].impl_ptr()))
        twins[by_storage[a].second] = earlier;
    }
  for (size_t k = 0; k < states.size(); ++k) {
    const Storage* storage = storage_of(*states[k]);
    auto member = std::lower_bound(by_storage.begin(), by_storage.end(), std::make_pair(storage, 0));
    for (; member != by_storage.end() && member->first == storage; ++member)
      if (twins[member->second] < 0 && shares_memory(inputs[member->second], states[k]))
        twins[member->second] = static_cast<int>(inputs.size() + k);
  }
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
        return fmt::format("the .grad of state %s{} is unset, the graph was captured reading it",
                           graph.grad_inputs[i - callers].leaf);
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
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].is_contiguous() != guards.inputs_contiguous[i])
      return why([&] {
        return fmt::format("input {} is {}contiguous (strides {}), the graph was captured with a {}contiguous one", i,
                           guards.inputs_contiguous[i] ? "not " : "", inputs[i].strides(),
                           guards.inputs_contiguous[i] ? "" : "non-");
      });
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].requires_grad() != guards.inputs_require_grad[i])
      return why([&] {
        return fmt::format("input {} {} grad, the graph was captured with it {}", i,
                           inputs[i].requires_grad() ? "requires" : "does not require",
                           guards.inputs_require_grad[i] ? "requiring it" : "not requiring it");
      });
  thread_local std::vector<int> twins;
  memory_twins(inputs, graph.state_tensors, twins);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (const int twin = twins[i]; twin != guards.input_twins[i])
      return why([&] {
        return fmt::format("input {} shares memory with {}, the graph was captured with {}", i,
                           sharer_text(twin, inputs.size()), sharer_text(guards.input_twins[i], inputs.size()));
      });
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
    if (const size_t hooks = hook_count(*impl); hooks != guards.states_hooks[i])
      return why([&] {
        return fmt::format("state %s{} has {} gradient hooks, the graph was captured with {}", i, hooks,
                           guards.states_hooks[i]);
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
