// optim::Adamax: option checks (PyTorch's messages) and the step, a composite of registry ops per
// parameter in PyTorch's order of operations (formulas in adamax.h).
#include "runtime/optim/adamax.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

void AdamaxOptions::validate(const char* optimizer) const {
  detail::check_adam_like_options(optimizer, lr, eps, betas, weight_decay);  // PyTorch's checks and wording
}

Adamax::Adamax(std::vector<Tensor> params, AdamaxOptions options, Where where)
    : OptimizerBase("Adamax", std::move(params), options, where) {}

Tensor Adamax::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

void Adamax::step_group(size_t group_index) {
  const AdamaxOptions& options = param_groups()[group_index].options;
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    // A copy (its tensors are shared), stored only once the update went through.
    const AdamaxParamState* existing = state(param);
    AdamaxParamState state = existing != nullptr ? *existing
                                                 : AdamaxParamState{.exp_avg = detail::new_state_buffer(param, 0.0),
                                                                    .exp_inf = detail::new_state_buffer(param, 0.0)};
    const int64_t step_count = state.step + 1;
    if (options.maximize) grad = grad.neg();
    if (options.weight_decay != 0.0) grad = grad.add(param, options.weight_decay);
    // lerp(a, b, w) as PyTorch computes it for w < 0.5: a + w * (b - a).
    state.exp_avg.add_(grad.sub(state.exp_avg), 1.0 - options.betas.first);
    state.exp_inf.mul_(options.betas.second);
    state.exp_inf.copy_(maximum(state.exp_inf, grad.abs().add(options.eps)));
    const Tensor direction = state.exp_avg.div(state.exp_inf);  // before the refresh: the next op takes it
    if (dispatch_mode_active()) {
      // Under capture: a compiled replay advances the step count and re-reads lr, so the
      // bias-corrected rate (the update's alpha) is a per-call attribute, never a baked constant.
      set_next_attr_refresh([this, group_index, param](Attrs& attrs) {
        AdamaxParamState& replayed = state_for(param);
        replayed.step += 1;
        attrs.set("alpha", -corrected_lr(param_groups()[group_index].options, replayed.step));
      });
    }
    Tensor(param).add_(direction, -corrected_lr(options, step_count));
    state.step = step_count;
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
