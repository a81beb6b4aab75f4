// optim::Adadelta: option checks (PyTorch's messages) and the step, a composite of registry ops
// per parameter in PyTorch's order of operations (formulas in adadelta.h).
#include "runtime/optim/adadelta.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

void AdadeltaOptions::validate(const char* optimizer) const {
  // PyTorch's checks and wording ("Invalid learning rate: -1"); `not 0.0 <= x` refuses NaN too.
  check(lr >= 0.0, "{}: Invalid learning rate: {}", optimizer, lr);
  check(rho >= 0.0 && rho <= 1.0, "{}: Invalid rho value: {}", optimizer, rho);
  check(eps >= 0.0, "{}: Invalid epsilon value: {}", optimizer, eps);
  check(weight_decay >= 0.0, "{}: Invalid weight_decay value: {}", optimizer, weight_decay);
}

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions options, Where where)
    : OptimizerBase("Adadelta", std::move(params), options, where) {}

Tensor Adadelta::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

void Adadelta::step_group(size_t group_index) {
  const AdadeltaOptions& options = param_groups()[group_index].options;
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    // A copy (its tensors are shared), stored only once the update went through.
    const AdadeltaParamState* existing = state(param);
    AdadeltaParamState state = existing != nullptr
                                   ? *existing
                                   : AdadeltaParamState{.square_avg = detail::new_state_buffer(param, 0.0),
                                                        .acc_delta = detail::new_state_buffer(param, 0.0)};
    if (options.maximize) grad = grad.neg();
    if (options.weight_decay != 0.0) grad = grad.add(param, options.weight_decay);
    state.square_avg.mul_(options.rho);
    state.square_avg.add_(grad.mul(grad), 1.0 - options.rho);
    const Tensor std_dev = state.square_avg.add(options.eps).sqrt();
    const Tensor delta = state.acc_delta.add(options.eps).sqrt().div(std_dev).mul(grad);
    state.acc_delta.mul_(options.rho);
    state.acc_delta.add_(delta.mul(delta), 1.0 - options.rho);
    if (dispatch_mode_active()) {
      // Under capture: a compiled replay re-reads lr and advances the step count (the update's
      // alpha is a per-call attribute, never a baked constant).
      set_next_attr_refresh([this, group_index, param](Attrs& attrs) {
        state_for(param).step += 1;
        attrs.set("alpha", -param_groups()[group_index].options.lr);
      });
    }
    Tensor(param).add_(delta, -options.lr);
    state.step += 1;
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
