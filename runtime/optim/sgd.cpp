// optim::SGD: option checks and the step: multi-tensor steps over batches of parameters
// (multi_tensor_steps.h), or one fused sgd_step_ per parameter when foreach is off or a dispatch
// mode (compile's capture) is active.
#include "runtime/optim/sgd.h"

#include <cmath>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/optim/fused_steps.h"
#include "runtime/optim/multi_tensor_steps.h"

namespace ember::optim {

void SGDOptions::validate(const char* optimizer) const {
  check(lr >= 0.0, "{}: learning rate must be non-negative, got {}", optimizer, lr);
  check(momentum >= 0.0, "{}: momentum must be non-negative, got {}", optimizer, momentum);
  check(weight_decay >= 0.0, "{}: weight_decay must be non-negative, got {}", optimizer, weight_decay);
  // Any finite value, as in PyTorch; NaN or infinity would silently turn every parameter to NaN.
  check(std::isfinite(dampening), "{}: dampening must be finite, got {}", optimizer, dampening);
  check(!nesterov || (momentum > 0.0 && dampening == 0.0),
        "{}: Nesterov momentum needs momentum > 0 and dampening 0, got momentum {} and dampening {}", optimizer,
        momentum, dampening);
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options, Where where)
    : OptimizerBase("SGD", std::move(params), options, where) {}

Tensor SGD::step_impl(const LossClosure& closure) {
  Tensor loss = detail::run_closure(closure);
  NoGradGuard no_grad;
  // Under capture the per-parameter ops are recorded (see adam.cpp for why).
  const bool batched_allowed = !dispatch_mode_active();
  for (size_t group_index = 0; group_index < param_groups().size(); ++group_index) {
    if (batched_allowed && param_groups()[group_index].options.foreach) step_batched(group_index);
    else step_each(group_index);
  }
  return loss;
}

Tensor SGD::momentum_buffer(const Tensor& param, bool& first_step) const {
  const SGDParamState* existing = state(param);
  first_step = existing == nullptr || !existing->momentum_buffer.defined();
  if (!first_step) return existing->momentum_buffer;
  // Made outside a capture, so that a compiled step binds it as state it reads and writes back
  // and its replays carry the momentum on (see adam.cpp). Left uninitialised: the first step
  // stores the update direction into it, and only then does it become state (a step that fails
  // must not leave a buffer the next step would read as the momentum so far).
  const DispatchModesHidden outside_capture;
  return empty(param.sizes(), {.dtype = param.dtype(), .device = param.device()});
}

void SGD::step_each(size_t group_index) {
  const SGDOptions& options = param_groups()[group_index].options;
  SgdStepArgs args{.lr = options.lr,
                   .momentum = options.momentum,
                   .dampening = options.dampening,
                   .weight_decay = options.weight_decay,
                   .nesterov = options.nesterov,
                   .maximize = options.maximize};
  for_each_param_with_grad(group_index, [&](const Tensor& param, const Tensor& grad) {
    Tensor buffer;
    args.first_step = false;
    if (options.momentum != 0.0) buffer = momentum_buffer(param, args.first_step);
    if (dispatch_mode_active()) {
      // Under capture: a compiled replay re-reads lr (a graph input, never a baked constant). A
      // replay always finds the buffer a captured first step made: never a first step itself.
      set_next_attr_refresh([this, group_index](Attrs& attrs) {
        attrs.set("lr", param_groups()[group_index].options.lr);
        attrs.set("first_step", false);
      });
    }
    sgd_step_(param, grad, buffer, args);
    if (args.first_step) state_for(param).momentum_buffer = buffer;  // filled: state from now on
  });
}

// Parameters with a gradient, batched by (device, dtype, first step of the buffer): the
// multi-tensor op takes one of each. A group usually makes one batch.
void SGD::step_batched(size_t group_index) {
  const ParamGroup& group = param_groups()[group_index];
  const SGDOptions& options = group.options;
  struct Batch {
    Device device;
    DType dtype;
    bool first_step = false;
    std::vector<Tensor> params, grads, buffers;
  };
  std::vector<Batch> batches;
  for (const Tensor& param : group.params) {
    Tensor grad = param.grad();
    if (!grad.defined()) continue;
    bool first_step = false;
    Tensor buffer = options.momentum != 0.0 ? momentum_buffer(param, first_step) : Tensor();
    Batch* batch = nullptr;
    for (Batch& candidate : batches)
      if (candidate.device == param.device() && candidate.dtype == param.dtype() && candidate.first_step == first_step)
        batch = &candidate;
    if (batch == nullptr) {
      batch = &batches.emplace_back(Batch{param.device(), param.dtype(), first_step});
      // Sized once for the whole group (usually one batch): no regrowth per parameter each step.
      batch->params.reserve(group.params.size());
      batch->grads.reserve(group.params.size());
      if (options.momentum != 0.0) batch->buffers.reserve(group.params.size());
    }
    batch->params.push_back(param);
    batch->grads.push_back(std::move(grad));
    if (buffer.defined()) batch->buffers.push_back(std::move(buffer));
  }
  for (const Batch& batch : batches) {
    multi_sgd_step_(batch.params, batch.grads, batch.buffers,
                    {.lr = options.lr,
                     .momentum = options.momentum,
                     .dampening = options.dampening,
                     .weight_decay = options.weight_decay,
                     .nesterov = options.nesterov,
                     .first_step = batch.first_step,
                     .maximize = options.maximize});
    if (batch.first_step)  // filled: state from now on
      for (size_t i = 0; i < batch.buffers.size(); ++i) state_for(batch.params[i]).momentum_buffer = batch.buffers[i];
  }
}

}  // namespace ember::optim
