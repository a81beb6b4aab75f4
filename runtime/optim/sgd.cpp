// optim::SGD: option checks and the step, one fused sgd_step_ per parameter.
#include "runtime/optim/sgd.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/optim/fused_steps.h"

namespace ember::optim {

void SGDOptions::validate(const char* optimizer) const {
  check(lr >= 0.0, "{}: learning rate must be non-negative, got {}", optimizer, lr);
  check(momentum >= 0.0, "{}: momentum must be non-negative, got {}", optimizer, momentum);
  check(weight_decay >= 0.0, "{}: weight_decay must be non-negative, got {}", optimizer, weight_decay);
  check(!nesterov || (momentum > 0.0 && dampening == 0.0),
        "{}: Nesterov momentum needs momentum > 0 and dampening 0, got momentum {} and dampening {}", optimizer,
        momentum, dampening);
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : OptimizerBase("SGD", std::move(params), options) {}

Tensor SGD::step(const LossClosure& closure) {
  Tensor loss = detail::run_closure(closure);
  NoGradGuard no_grad;
  for (size_t group_index = 0; group_index < param_groups().size(); ++group_index) {
    const ParamGroup& group = param_groups()[group_index];
    const SGDOptions& options = group.options;
    SgdStepArgs args{.lr = options.lr,
                     .momentum = options.momentum,
                     .dampening = options.dampening,
                     .weight_decay = options.weight_decay,
                     .nesterov = options.nesterov};
    for (const Tensor& param : group.params) {
      const Tensor grad = param.grad();
      if (!grad.defined()) continue;
      Tensor buffer;
      args.first_step = false;
      if (options.momentum != 0.0) {
        SGDParamState& state = state_for(param);
        if (!state.momentum_buffer.defined()) {
          // Left uninitialised: the first step stores the update direction into it.
          state.momentum_buffer = empty(param.sizes(), {.dtype = param.dtype(), .device = param.device()});
          args.first_step = true;
        }
        buffer = state.momentum_buffer;
      }
      if (dispatch_mode_active()) {
        // Under capture: a compiled replay re-reads lr (a graph input, never a baked constant).
        set_next_attr_refresh([this, group_index](Attrs& attrs) {
          attrs.set("lr", param_groups()[group_index].options.lr);
        });
      }
      sgd_step_(param, grad, buffer, args);
    }
  }
  return loss;
}

}  // namespace ember::optim
