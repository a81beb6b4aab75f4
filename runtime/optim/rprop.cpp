// optim::Rprop: option checks (PyTorch's messages) and the step, a composite of registry ops per
// parameter in PyTorch's order of operations (formulas in rprop.h).
#include "runtime/optim/rprop.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::optim {

void RpropOptions::validate(const char* optimizer) const {
  // PyTorch's checks and wording; each comparison refuses NaN too.
  check(lr >= 0.0, "{}: Invalid learning rate: {}", optimizer, lr);
  check(0.0 < etas.first && etas.first < 1.0 && 1.0 < etas.second, "{}: Invalid eta values: {}, {}", optimizer,
        etas.first, etas.second);
  // PyTorch does not check the bounds; a clamp with min > max (or a negative size, which flips the
  // update's direction) is always a mistake, so it is refused here.
  check(0.0 <= step_sizes.first && step_sizes.first <= step_sizes.second,
        "{}: Invalid step_sizes values: {}, {} (expected 0 <= min <= max)", optimizer, step_sizes.first,
        step_sizes.second);
}

Rprop::Rprop(std::vector<Tensor> params, RpropOptions options, Where where)
    : OptimizerBase("Rprop", std::move(params), options, where) {}

Tensor Rprop::step_impl(const LossClosure& closure) {
  return step_groups(closure, [this](size_t group_index) { step_group(group_index); });
}

void Rprop::step_group(size_t group_index) {
  const RpropOptions& options = param_groups()[group_index].options;
  const auto [etaminus, etaplus] = options.etas;
  for_each_param_with_grad(group_index, [&](const Tensor& param, Tensor grad) {
    // A copy (its tensors are shared), stored only once the update went through.
    const RpropParamState* existing = state(param);
    RpropParamState state = existing != nullptr
                                ? *existing
                                : RpropParamState{.prev = detail::new_state_buffer(param, 0.0),
                                                  .step_size = detail::new_state_buffer(param, options.lr)};
    if (options.maximize) grad = grad.neg();
    const TensorOptions scalar{.dtype = param.dtype(), .device = param.device()};
    const Tensor zero = full({}, 0.0, scalar);
    // PyTorch overwrites the signs in place in this order; masks of the original signs give the
    // same factors (etaminus lies in (0, 1), so no fill meets an earlier one), and a NaN sign stays NaN.
    const Tensor signs = sign(grad.mul(state.prev));
    const Tensor factor = signs.masked_fill(gt(signs, zero), etaplus)
                              .masked_fill(lt(signs, zero), etaminus)
                              .masked_fill(eq(signs, zero), 1.0);
    state.step_size.mul_(factor);
    state.step_size.copy_(clamp(state.step_size, options.step_sizes.first, options.step_sizes.second));
    grad = grad.masked_fill(eq(factor, full({}, etaminus, scalar)), 0.0);
    const Tensor update = sign(grad).mul(state.step_size);
    if (dispatch_mode_active()) {
      // Under capture: a compiled replay advances the step count (the update's alpha is fixed).
      set_next_attr_refresh([this, param](Attrs& attrs) {
        state_for(param).step += 1;
        attrs.set("alpha", -1.0);
      });
    }
    Tensor(param).add_(update, -1.0);
    state.prev.copy_(grad);
    state.step += 1;
    state_for(param) = std::move(state);  // only once the update went through
  });
}

}  // namespace ember::optim
