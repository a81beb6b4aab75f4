// optim::ASGD: option checks (PyTorch's messages) and the step, a composite of registry ops per
// parameter in PyTorch's order of operations (formulas in asgd.h).
#include "runtime/optim/asgd.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

void ASGDOptions::validate(const char* optimizer) const {
  // PyTorch's checks and wording; each comparison refuses NaN too.
  check(lr >= 0.0, "{}: Invalid learning rate: {}", optimizer, lr);
  check(weight_decay >= 0.0, "{}: Invalid weight_decay value: {}", optimizer, weight_decay);
}

ASGD::ASGD(std::vector<Tensor> params, ASGDOptions options, Where where)
    : OptimizerBase("ASGD", std::move(params), options, where) {}

Tensor ASGD::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

void ASGD::step_group(size_t group_index) {
  const ASGDOptions& options = param_groups()[group_index].options;
  const bool capturing = dispatch_mode_active();
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    // A copy (its tensor is shared), stored only once the update went through.
    const ASGDParamState* existing = state(param);
    ASGDParamState state =
        existing != nullptr ? *existing
                            : ASGDParamState{.eta = options.lr, .mu = 1.0, .ax = detail::new_state_buffer(param, 0.0)};
    const int64_t step_count = state.step + 1;
    auto current = [this, group_index]() -> const ASGDOptions& { return param_groups()[group_index].options; };
    if (options.maximize) grad = grad.neg();
    if (options.weight_decay != 0.0) grad = grad.add(param, options.weight_decay);
    // A replay's refreshes run in capture order: the decay reads eta, the update reads eta and
    // advances step and eta, the average (when it multiplies) reads the old mu and advances it.
    const bool copies_average = state.mu == 1.0;  // PyTorch's `mu.item() != 1` branch
    if (capturing) {
      set_next_attr_refresh(
          [this, current, param](Attrs& attrs) { attrs.set("value", 1.0 - current().lambd * state_for(param).eta); });
    }
    Tensor(param).mul_(1.0 - options.lambd * state.eta);
    if (capturing) {
      set_next_attr_refresh([this, current, param, copies_average](Attrs& attrs) {
        ASGDParamState& replayed = state_for(param);
        attrs.set("alpha", -replayed.eta);
        replayed.step += 1;
        replayed.eta = current().eta(replayed.step);
        if (copies_average) replayed.mu = current().mu(replayed.step);
      });
    }
    Tensor(param).add_(grad, -state.eta);
    if (copies_average) {
      state.ax.copy_(param);
    } else {
      const Tensor difference = param.sub(state.ax);
      if (capturing) {  // on the multiplication by mu, the next op dispatched
        set_next_attr_refresh([this, current, param](Attrs& attrs) {
          ASGDParamState& replayed = state_for(param);
          attrs.set("value", replayed.mu);
          replayed.mu = current().mu(replayed.step);
        });
      }
      state.ax.add_(difference.mul(state.mu));
    }
    if (capturing) {
      // The branch above is baked into the graph: a replay whose mu takes the other branch recompiles.
      notify_host_guard(
          fmt::format("ASGD: the average of a parameter {} (mu == 1)", copies_average ? "is copied" : "is not copied"),
          [alive = std::weak_ptr<const bool>(alive_.token), this, param, copies_average] {
            if (alive.expired()) return false;
            const ASGDParamState* replayed = this->state(param);
            return replayed != nullptr && (replayed->mu == 1.0) == copies_average;
          });
    }
    state.step = step_count;
    state.eta = options.eta(step_count);
    state.mu = options.mu(step_count);
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
