// optim::NAdam: option checks (PyTorch's messages) and the step, a composite of registry ops per
// parameter in PyTorch's order of operations (formulas and the refreshes' order in nadam.h).
#include "runtime/optim/nadam.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

namespace {

double bias_correction2(const NAdamOptions& options, int64_t step) {
  return 1.0 - std::pow(options.betas.second, static_cast<double>(step));
}
// The rates of the two updates at step `step`, given the mu_product that includes mu_step.
double grad_rate(const NAdamOptions& options, int64_t step, double mu_product) {
  return -options.lr * (1.0 - options.mu(step)) / (1.0 - mu_product);
}
double exp_avg_rate(const NAdamOptions& options, int64_t step, double mu_product) {
  const double mu_next = options.mu(step + 1);
  return -options.lr * mu_next / (1.0 - mu_product * mu_next);
}

}  // namespace

void NAdamOptions::validate(const char* optimizer) const {
  detail::check_adam_like_options(optimizer, lr, eps, betas, weight_decay);  // PyTorch's checks and wording
  check(momentum_decay >= 0.0, "{}: Invalid momentum_decay value: {}", optimizer, momentum_decay);
}

NAdam::NAdam(std::vector<Tensor> params, NAdamOptions options, Where where)
    : OptimizerBase("NAdam", std::move(params), options, where) {}

Tensor NAdam::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

void NAdam::step_group(size_t group_index) {
  const NAdamOptions& options = param_groups()[group_index].options;
  const bool capturing = dispatch_mode_active();
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    // A copy (its tensors are shared), stored only once the update went through.
    const NAdamParamState* existing = state(param);
    NAdamParamState state = existing != nullptr ? *existing
                                                : NAdamParamState{.exp_avg = detail::new_state_buffer(param, 0.0),
                                                                  .exp_avg_sq = detail::new_state_buffer(param, 0.0)};
    const int64_t step_count = state.step + 1;
    // The group's options when a replay runs (the captured `options` reference is this call's).
    auto current = [this, group_index]() -> const NAdamOptions& { return param_groups()[group_index].options; };
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
    const double mu_product = state.mu_product * options.mu(step_count);
    state.exp_avg.add_(grad.sub(state.exp_avg), 1.0 - options.betas.first);  // lerp, as PyTorch's for w < 0.5
    state.exp_avg_sq.mul_(options.betas.second);
    state.exp_avg_sq.add_(grad.mul(grad), 1.0 - options.betas.second);
    if (capturing) {
      // The first refresh of this parameter's step that needs t: it advances step and mu_product.
      set_next_attr_refresh([this, current, param](Attrs& attrs) {
        NAdamParamState& replayed = state_for(param);
        replayed.step += 1;
        replayed.mu_product *= current().mu(replayed.step);
        attrs.set("value", bias_correction2(current(), replayed.step));
      });
    }
    const Tensor denom = state.exp_avg_sq.div(bias_correction2(options, step_count)).sqrt().add(options.eps);
    const Tensor grad_direction = grad.div(denom);
    const Tensor exp_avg_direction = state.exp_avg.div(denom);
    if (capturing) {
      set_next_attr_refresh([this, current, param](Attrs& attrs) {
        const NAdamParamState& replayed = state_for(param);
        attrs.set("alpha", grad_rate(current(), replayed.step, replayed.mu_product));
      });
    }
    Tensor(param).add_(grad_direction, grad_rate(options, step_count, mu_product));
    if (capturing) {
      set_next_attr_refresh([this, current, param](Attrs& attrs) {
        const NAdamParamState& replayed = state_for(param);
        attrs.set("alpha", exp_avg_rate(current(), replayed.step, replayed.mu_product));
      });
    }
    Tensor(param).add_(exp_avg_direction, exp_avg_rate(options, step_count, mu_product));
    state.step = step_count;
    state.mu_product = mu_product;
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
