// optim::RMSprop: option checks (PyTorch's messages) and the step, a composite of registry ops
// per parameter in PyTorch's order of operations (formulas in rmsprop.h).
#include "runtime/optim/rmsprop.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

void RMSpropOptions::validate(const char* optimizer) const {
  // PyTorch's checks and wording ("Invalid learning rate: -1"); `not 0.0 <= x` refuses NaN too.
  check(lr >= 0.0, "{}: Invalid learning rate: {}", optimizer, lr);
  check(eps >= 0.0, "{}: Invalid epsilon value: {}", optimizer, eps);
  check(momentum >= 0.0, "{}: Invalid momentum value: {}", optimizer, momentum);
  check(weight_decay >= 0.0, "{}: Invalid weight_decay value: {}", optimizer, weight_decay);
  check(alpha >= 0.0, "{}: Invalid alpha value: {}", optimizer, alpha);
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options, Where where)
    : OptimizerBase("RMSprop", std::move(params), options, where) {}

Tensor RMSprop::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

RMSpropParamState RMSprop::ready_state(const Tensor& param, const RMSpropOptions& options) const {
  // A copy (its tensors are shared): stored only once the update went through, so a step that
  // fails leaves no new state behind.
  const RMSpropParamState* existing = state(param);
  RMSpropParamState state = existing != nullptr ? *existing : RMSpropParamState{};
  if (!state.square_avg.defined()) state.square_avg = detail::new_state_buffer(param, 0.0);
  if (options.momentum > 0.0 && !state.momentum_buffer.defined())
    state.momentum_buffer = detail::new_state_buffer(param, 0.0);
  if (options.centered && !state.grad_avg.defined()) state.grad_avg = detail::new_state_buffer(param, 0.0);
  return state;
}

void RMSprop::step_group(size_t group_index) {
  const RMSpropOptions& options = param_groups()[group_index].options;
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    RMSpropParamState state = ready_state(param, options);
    if (options.maximize) grad = grad.neg();
    if (options.weight_decay != 0.0) grad = grad.add(param, options.weight_decay);
    state.square_avg.mul_(options.alpha);
    state.square_avg.add_(grad.mul(grad), 1.0 - options.alpha);
    Tensor avg;
    if (options.centered) {
      state.grad_avg.mul_(options.alpha);
      state.grad_avg.add_(grad, 1.0 - options.alpha);
      avg = state.square_avg.sub(state.grad_avg.mul(state.grad_avg)).sqrt().add(options.eps);
    } else {
      avg = state.square_avg.sqrt().add(options.eps);
    }
    Tensor direction = grad.div(avg);
    if (options.momentum > 0.0) {
      state.momentum_buffer.mul_(options.momentum);
      state.momentum_buffer.add_(direction);
      direction = state.momentum_buffer;
    }
    if (dispatch_mode_active()) {
      // Under capture: a compiled replay re-reads lr and advances the step count (the update's
      // alpha is a per-call attribute, never a baked constant).
      set_next_attr_refresh([this, group_index, param](Attrs& attrs) {
        state_for(param).step += 1;
        attrs.set("alpha", -param_groups()[group_index].options.lr);
      });
    }
    Tensor(param).add_(direction, -options.lr);
    state.step += 1;
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
