// optim::RAdam: option checks (PyTorch's messages) and the step, a composite of registry ops per
// parameter in PyTorch's order of operations (formulas in radam.h).
#include "runtime/optim/radam.h"

#include <cmath>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

namespace {

// rho_inf and rho_t of step t, as PyTorch computes them.
double rho_infinity(const RAdamOptions& options) { return 2.0 / (1.0 - options.betas.second) - 1.0; }
double rho_at(const RAdamOptions& options, int64_t step) {
  const double t = static_cast<double>(step);
  const double beta2_power = std::pow(options.betas.second, t);
  return rho_infinity(options) - 2.0 * t * beta2_power / (1.0 - beta2_power);
}

}  // namespace

void RAdamOptions::validate(const char* optimizer) const {
  detail::check_adam_like_options(optimizer, lr, eps, betas, weight_decay);  // PyTorch's checks and wording
}

bool RAdam::rectified(const RAdamOptions& options, int64_t step) { return rho_at(options, step) > 5.0; }

double RAdam::update_rate(const RAdamOptions& options, int64_t step) {
  const double t = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(options.betas.first, t);
  if (!rectified(options, step)) return -options.lr / bias_correction1;
  const double bias_correction2 = 1.0 - std::pow(options.betas.second, t);
  const double rho_t = rho_at(options, step), rho_inf = rho_infinity(options);
  const double rect = std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
  return -options.lr * rect * std::sqrt(bias_correction2) / bias_correction1;
}

RAdam::RAdam(std::vector<Tensor> params, RAdamOptions options, Where where)
    : OptimizerBase("RAdam", std::move(params), options, where) {}

Tensor RAdam::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

void RAdam::step_group(size_t group_index) {
  const RAdamOptions& options = param_groups()[group_index].options;
  const bool capturing = dispatch_mode_active();
  auto current = [this, group_index]() -> const RAdamOptions& { return param_groups()[group_index].options; };
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    // A copy (its tensors are shared), stored only once the update went through.
    const RAdamParamState* existing = state(param);
    RAdamParamState state = existing != nullptr ? *existing
                                                : RAdamParamState{.exp_avg = detail::new_state_buffer(param, 0.0),
                                                                  .exp_avg_sq = detail::new_state_buffer(param, 0.0)};
    const int64_t step_count = state.step + 1;
    if (options.maximize) grad = grad.neg();
    if (options.weight_decay != 0.0) {
      if (options.decoupled_weight_decay) {
        if (capturing)  // a replay re-reads lr: the factor needs no step count, so any order of refreshes works
          set_next_attr_refresh(
              [current](Attrs& attrs) { attrs.set("value", 1.0 - current().lr * current().weight_decay); });
        Tensor(param).mul_(1.0 - options.lr * options.weight_decay);
      } else {
        grad = grad.add(param, options.weight_decay);
      }
    }
    state.exp_avg.add_(grad.sub(state.exp_avg), 1.0 - options.betas.first);  // lerp, as PyTorch's for w < 0.5
    state.exp_avg_sq.mul_(options.betas.second);
    state.exp_avg_sq.add_(grad.mul(grad), 1.0 - options.betas.second);
    const bool rectify = rectified(options, step_count);
    const Tensor direction = rectify ? state.exp_avg.div(state.exp_avg_sq.sqrt().add(options.eps)) : state.exp_avg;
    if (capturing) {
      // The graph holds one of the two updates: a replay whose step takes the other recompiles.
      // Guards are checked in order and the group's guard (for_each_param_with_grad), which fails
      // once this optimizer is gone, came first, so `this` is alive when this one runs.
      notify_host_guard(fmt::format("RAdam param group {}: rho_t > 5 is {} at the next step", group_index, rectify),
                        [this, current, param, rectify] {
                          const RAdamParamState* now = this->state(param);
                          return rectified(current(), (now != nullptr ? now->step : 0) + 1) == rectify;
                        });
      set_next_attr_refresh([this, current, param](Attrs& attrs) {
        RAdamParamState& replayed = state_for(param);
        replayed.step += 1;
        attrs.set("alpha", update_rate(current(), replayed.step));
      });
    }
    Tensor(param).add_(direction, update_rate(options, step_count));
    state.step = step_count;
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
