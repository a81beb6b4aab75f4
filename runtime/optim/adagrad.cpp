// optim::Adagrad: option checks (PyTorch's messages), the initial state and the step, a composite
// of registry ops per parameter in PyTorch's order of operations (formulas in adagrad.h).
#include "runtime/optim/adagrad.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

void AdagradOptions::validate(const char* optimizer) const {
  // PyTorch's checks and wording ("Invalid learning rate: -1"); `not 0.0 <= x` refuses NaN too.
  check(lr >= 0.0, "{}: Invalid learning rate: {}", optimizer, lr);
  check(lr_decay >= 0.0, "{}: Invalid lr_decay value: {}", optimizer, lr_decay);
  check(weight_decay >= 0.0, "{}: Invalid weight_decay value: {}", optimizer, weight_decay);
  check(initial_accumulator_value >= 0.0, "{}: Invalid initial_accumulator_value value: {}", optimizer,
        initial_accumulator_value);
  check(eps >= 0.0, "{}: Invalid epsilon value: {}", optimizer, eps);
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options, Where where)
    : OptimizerBase("Adagrad", std::move(params), options, where) {
  init_state(0);
}

void Adagrad::add_param_group(std::vector<Tensor> params, std::optional<AdagradOptions> options, Where where) {
  OptimizerBase::add_param_group(std::move(params), options, where);
  init_state(param_groups().size() - 1);
}

void Adagrad::init_state(size_t group_index) {
  const ParamGroup& group = param_groups()[group_index];
  for (const Tensor& param : group.params) {
    if (state(param) != nullptr) continue;
    state_for(param) = {.step = 0, .sum = detail::new_state_buffer(param, group.options.initial_accumulator_value)};
  }
}

Tensor Adagrad::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

void Adagrad::step_group(size_t group_index) {
  const AdagradOptions& options = param_groups()[group_index].options;
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    // A parameter whose state load_state_dict did not restore, or one added through the base
    // class's add_param_group, starts from the initial state here.
    const AdagradParamState* existing = state(param);
    AdagradParamState state = existing != nullptr
                                  ? *existing
                                  : AdagradParamState{.sum = detail::new_state_buffer(
                                                          param, options.initial_accumulator_value)};
    const int64_t step_count = state.step + 1;
    if (options.maximize) grad = grad.neg();
    if (options.weight_decay != 0.0) grad = grad.add(param, options.weight_decay);
    state.sum.add_(grad.mul(grad));
    const Tensor direction = grad.div(state.sum.sqrt().add(options.eps));
    if (dispatch_mode_active()) {
      // Under capture: a compiled replay advances the step count and re-reads lr, so the decayed
      // rate (the update's alpha) is a per-call attribute, never a baked constant.
      set_next_attr_refresh([this, group_index, param](Attrs& attrs) {
        AdagradParamState& replayed = state_for(param);
        replayed.step += 1;
        const AdagradOptions& now = param_groups()[group_index].options;
        attrs.set("alpha", -decayed_lr(now.lr, now.lr_decay, replayed.step));
      });
    }
    Tensor(param).add_(direction, -decayed_lr(options.lr, options.lr_decay, step_count));
    state.step = step_count;
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
