// Whether a compiled entry's graph read a caller's argument also as a tensor fn reaches itself
// (CapturedArgument in compile.h): the captured arguments, their check per call, and the verdict
// of the call traced again to find out.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "graph/compile.h"
#include "graph/compile_internal.h"
#include "graph/compile_log.h"

namespace ember::graph {

bool CapturedArgument::holds(const TensorImpl& impl) const {
  // The address alone could be a new storage where a freed one was: it counts while ours lives.
  return impl.storage.get() == address && !storage.expired() && impl.offset == offset && impl.sizes == sizes &&
         impl.strides == strides && impl.dtype == dtype;
}

CapturedArgument captured_argument(const Tensor& argument) {
  const TensorImpl& impl = *argument.impl();
  CapturedArgument captured{.storage = impl.storage, .address = impl.storage.get(), .offset = impl.offset,
                            .sizes = impl.sizes, .strides = impl.strides, .dtype = impl.dtype};
  // No storage, nothing fn could read it through.
  if (!impl.storage) captured.binding = CapturedArgument::Binding::Free;
  return captured;
}

void unverified_arguments(Guards& guards, const std::vector<Tensor>& inputs, std::vector<int>& unverified) {
  unverified.clear();
  for (size_t i = 0; i < guards.arguments.size(); ++i) {
    CapturedArgument& argument = guards.arguments[i];
    if (argument.binding != CapturedArgument::Binding::Unverified) continue;
    if (argument.storage.expired()) {
      argument.binding = CapturedArgument::Binding::Free;
      argument.storage.reset();
    } else if (!argument.holds(*inputs[i].impl())) {
      unverified.push_back(static_cast<int>(i));
    }
  }
}

bool CompiledFunction::settle_arguments(const Verification& verification, const Graph& traced,
                                        const std::vector<Tensor>& grad_inputs) {
  // The trace with other arguments lifted whatever fn reads itself as state (or as a parameter's
  // .grad): a tensor over a captured argument's bytes is one the capture read as that argument.
  std::vector<CapturedArgument>& arguments = entries_[verification.entry].guards.arguments;
  std::string pinned;
  for (const int i : verification.arguments) {
    CapturedArgument& argument = arguments[static_cast<size_t>(i)];
    const bool read = std::any_of(traced.state_tensors.begin(), traced.state_tensors.end(),
                                  [&](const std::shared_ptr<TensorImpl>& state) { return argument.holds(*state); }) ||
                      std::any_of(grad_inputs.begin(), grad_inputs.end(),
                                  [&](const Tensor& grad) { return argument.holds(*grad.impl()); });
    argument.binding = read ? CapturedArgument::Binding::Pinned : CapturedArgument::Binding::Free;
    if (read && pinned.empty())
      pinned = fmt::format("input {} is another tensor than when captured, and the graph read the captured one "
                           "also where the function reads it without receiving it (shape {})",
                           i, argument.sizes);
  }
  log::event("guards",
             fmt::format("entry {}: the captured arguments {} {}", verification.entry,
                         fmt::join(verification.arguments, ", "),
                         pinned.empty() ? "are free: the function reads them only as its arguments"
                                        : "are pinned: the function also reads them itself"),
             {{"entry", verification.entry}, {"arguments", verification.arguments}, {"pinned", !pinned.empty()}});
  if (pinned.empty()) return false;
  recompile_reasons_.push_back(pinned);
  log::event("recompiles", fmt::format("recompiling: {}", pinned),
             {{"reason", pinned}, {"recompiles", recompile_reasons_.size()}});
  if (variants() < options_.cache_limit) return true;
  fall_back(fmt::format("the cache limit of {} compiled variants is reached ({})", options_.cache_limit, pinned),
            "what the guards see keeps changing (recompile_reasons() lists it): keep it fixed between calls, or "
            "raise cache_limit");
  return false;
}

}  // namespace ember::graph
