// optim::Adam / AdamW: option checks and the step: multi-tensor steps over batches of parameters
// (multi_tensor_steps.h), or one fused adam_step_ per parameter when foreach is off or a dispatch
// mode (compile's capture) is active.
#include "runtime/optim/adam.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/optim/fused_steps.h"
#include "runtime/optim/multi_tensor_steps.h"

namespace ember::optim {

namespace {

template <typename Options>
AdamStepArgs adam_args(const Options& options, int64_t step, bool decoupled) {
  return {.lr = options.lr,
          .beta1 = options.betas.first,
          .beta2 = options.betas.second,
          .eps = options.eps,
          .weight_decay = options.weight_decay,
          .step = step,
          .amsgrad = options.amsgrad,
          .decoupled = decoupled,
          .maximize = options.maximize};
}

}  // namespace

template <bool Decoupled>
void AdamOptionsFor<Decoupled>::validate(const char* optimizer) const {
  check(lr >= 0.0, "{}: learning rate must be non-negative, got {}", optimizer, lr);
  check(eps >= 0.0, "{}: eps must be non-negative, got {}", optimizer, eps);
  check(betas.first >= 0.0 && betas.first < 1.0, "{}: beta1 must be in [0, 1), got {}", optimizer, betas.first);
  check(betas.second >= 0.0 && betas.second < 1.0, "{}: beta2 must be in [0, 1), got {}", optimizer, betas.second);
  check(weight_decay >= 0.0, "{}: weight_decay must be non-negative, got {}", optimizer, weight_decay);
}

template <bool Decoupled>
AdamFamily<Decoupled>::AdamFamily(std::vector<Tensor> params, Options options, Where where)
    : OptimizerBase<Options, AdamParamState>(Decoupled ? "AdamW" : "Adam", std::move(params), options, where) {}

template <bool Decoupled>
Tensor AdamFamily<Decoupled>::step_impl(const LossClosure& closure) {
  Tensor loss = detail::run_closure(closure);
  NoGradGuard no_grad;
  // Under capture the per-parameter ops are recorded: compile's functionalization and replay
  // refresh know in-place ops with a few outputs, not a step that writes a whole list.
  const bool batched_allowed = !dispatch_mode_active();
  for (size_t group_index = 0; group_index < this->param_groups().size(); ++group_index) {
    if (batched_allowed && this->param_groups()[group_index].options.foreach) step_batched(group_index);
    else step_each(group_index);
  }
  return loss;
}

template <bool Decoupled>
AdamParamState AdamFamily<Decoupled>::ready_state(const Tensor& param, const Options& options) const {
  // A copy (its tensors are shared): the caller stores it only once the update went through, so
  // a step that fails leaves no state behind, as if it had not been called.
  const AdamParamState* existing = this->state(param);
  AdamParamState state = existing != nullptr ? *existing : AdamParamState{};
  const TensorOptions like{.dtype = param.dtype(), .device = param.device()};
  // Made outside a capture (a step compiled without a warm-up call, or a parameter's first step
  // in a recompile): the graph then binds the moments as state it reads and writes back, and its
  // replays carry them on. Zeros made inside the graph would be made anew by every replay.
  auto make_zeros = [&] {
    const DispatchModesHidden outside_capture;
    return zeros(param.sizes(), like);
  };
  if (!state.exp_avg.defined()) {
    state.exp_avg = make_zeros();
    state.exp_avg_sq = make_zeros();
  }
  if (options.amsgrad && !state.max_exp_avg_sq.defined()) state.max_exp_avg_sq = make_zeros();
  return state;
}

template <bool Decoupled>
void AdamFamily<Decoupled>::step_each(size_t group_index) {
  const Options& options = this->param_groups()[group_index].options;
  this->for_each_param_with_grad(group_index, [&](const Tensor& param, const Tensor& grad) {
    AdamParamState state = ready_state(param, options);
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
               adam_args(options, step_count, Decoupled));
    state.step = step_count;
    this->state_for(param) = std::move(state);  // only once the update went through
  });
}

// Parameters with a gradient, batched by (device, dtype, step count): the multi-tensor op takes
// one of each. A group usually makes one batch.
template <bool Decoupled>
void AdamFamily<Decoupled>::step_batched(size_t group_index) {
  const auto& group = this->param_groups()[group_index];
  const Options& options = group.options;
  struct Batch {
    Device device;
    DType dtype;
    int64_t step = 0;
    std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
    std::vector<AdamParamState> states;
  };
  std::vector<Batch> batches;
  for (const Tensor& param : group.params) {
    Tensor grad = param.grad();
    if (!grad.defined()) continue;
    AdamParamState state = ready_state(param, options);
    const int64_t step_count = state.step + 1;
    Batch* batch = nullptr;
    for (Batch& candidate : batches)
      if (candidate.device == param.device() && candidate.dtype == param.dtype() && candidate.step == step_count)
        batch = &candidate;
    if (batch == nullptr) {
      batch = &batches.emplace_back(Batch{param.device(), param.dtype(), step_count});
      // Sized once for the whole group (usually one batch): no regrowth per parameter each step.
      const size_t most = group.params.size();
      for (std::vector<Tensor>* list : {&batch->params, &batch->grads, &batch->exp_avgs, &batch->exp_avg_sqs})
        list->reserve(most);
      if (options.amsgrad) batch->max_exp_avg_sqs.reserve(most);
      batch->states.reserve(most);
    }
    batch->params.push_back(param);
    batch->grads.push_back(std::move(grad));
    batch->exp_avgs.push_back(state.exp_avg);
    batch->exp_avg_sqs.push_back(state.exp_avg_sq);
    if (options.amsgrad) batch->max_exp_avg_sqs.push_back(state.max_exp_avg_sq);
    batch->states.push_back(std::move(state));
  }
  for (Batch& batch : batches) {
    multi_adam_step_(batch.params, batch.grads, batch.exp_avgs, batch.exp_avg_sqs, batch.max_exp_avg_sqs,
                     adam_args(options, batch.step, Decoupled));
    for (size_t i = 0; i < batch.states.size(); ++i) {  // only once the update went through
      batch.states[i].step = batch.step;
      this->state_for(batch.params[i]) = std::move(batch.states[i]);
    }
  }
}

template struct AdamOptionsFor<false>;
template struct AdamOptionsFor<true>;
template class AdamFamily<false>;
template class AdamFamily<true>;

}  // namespace ember::optim
