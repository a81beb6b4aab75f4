// optim::Adam / AdamW: option checks and the step, one fused adam_step_ per parameter.
#include "runtime/optim/adam.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/optim/fused_steps.h"

namespace ember::optim {

template <bool Decoupled>
void AdamOptionsFor<Decoupled>::validate(const char* optimizer) const {
  check(lr >= 0.0, "{}: learning rate must be non-negative, got {}", optimizer, lr);
  check(eps >= 0.0, "{}: eps must be non-negative, got {}", optimizer, eps);
  check(betas.first >= 0.0 && betas.first < 1.0, "{}: beta1 must be in [0, 1), got {}", optimizer, betas.first);
  check(betas.second >= 0.0 && betas.second < 1.0, "{}: beta2 must be in [0, 1), got {}", optimizer, betas.second);
  check(weight_decay >= 0.0, "{}: weight_decay must be non-negative, got {}", optimizer, weight_decay);
}

template <bool Decoupled>
AdamFamily<Decoupled>::AdamFamily(std::vector<Tensor> params, Options options)
    : OptimizerBase<Options, AdamParamState>(Decoupled ? "AdamW" : "Adam", std::move(params), options) {}

template <bool Decoupled>
Tensor AdamFamily<Decoupled>::step(const LossClosure& closure) {
  Tensor loss = detail::run_closure(closure);
  NoGradGuard no_grad;
  for (size_t group_index = 0; group_index < this->param_groups().size(); ++group_index) {
    const auto& group = this->param_groups()[group_index];
    const Options& options = group.options;
    for (const Tensor& param : group.params) {
      const Tensor grad = param.grad();
      if (!grad.defined()) continue;
      AdamParamState& state = this->state_for(param);
      const TensorOptions like{.dtype = param.dtype(), .device = param.device()};
      if (!state.exp_avg.defined()) {
        state.exp_avg = zeros(param.sizes(), like);
        state.exp_avg_sq = zeros(param.sizes(), like);
      }
      if (options.amsgrad && !state.max_exp_avg_sq.defined()) state.max_exp_avg_sq = zeros(param.sizes(), like);
      const int64_t step_count = state.step + 1;
      if (dispatch_mode_active()) {
        // Under capture: a compiled replay re-reads lr and advances the step count (graph inputs).
        set_next_attr_refresh([this, group_index, param](Attrs& attrs) {
          AdamParamState& replayed = this->state_for(param);
          replayed.step += 1;
          attrs.set("step", replayed.step);
          attrs.set("lr", this->param_groups()[group_index].options.lr);
        });
      }
      adam_step_(param, grad, state.exp_avg, state.exp_avg_sq, options.amsgrad ? state.max_exp_avg_sq : Tensor(),
                 {.lr = options.lr,
                  .beta1 = options.betas.first,
                  .beta2 = options.betas.second,
                  .eps = options.eps,
                  .weight_decay = options.weight_decay,
                  .step = step_count,
                  .amsgrad = options.amsgrad,
                  .decoupled = Decoupled});
      state.step = step_count;  // only once the update went through
    }
  }
  return loss;
}

template struct AdamOptionsFor<false>;
template struct AdamOptionsFor<true>;
template class AdamFamily<false>;
template class AdamFamily<true>;

}  // namespace ember::optim
