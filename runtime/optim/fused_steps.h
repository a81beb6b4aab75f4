// The fused optimizer update ops (registry ops sgd_step_ and adam_step_, defined in
// runtime/ops/optim_ops.cpp). One call updates one parameter and its state in a single pass over
// memory. SGD, Adam and AdamW call them per parameter when foreach is off or under capture (the
// multi-tensor steps of multi_tensor_steps.h otherwise); call them directly only to build another
// optimizer. They run under the caller's grad mode: call them with NoGradGuard.
#pragma once

#include "runtime/tensor.h"

namespace ember::optim {

struct SgdStepArgs {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool first_step = false;  // momentum_buffer holds no value yet: it is set to the first direction
  bool maximize = false;    // gradient ascent: the gradient is negated first
};

// sgd_step_: inputs param, grad, momentum_buffer (undefined when momentum == 0);
// attrs lr, momentum, dampening, weight_decay, nesterov, first_step, maximize. Writes param and the buffer.
void sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdStepArgs& args,
               Where where = Where::current());

struct AdamStepArgs {
  double lr = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  int64_t step = 1;        // 1-based count of updates including this one (bias corrections)
  bool amsgrad = false;
  bool decoupled = false;  // AdamW: decay the parameter instead of adding to the gradient
  bool maximize = false;   // gradient ascent: the gradient is negated first
};

// adam_step_: inputs param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (undefined unless amsgrad);
// attrs lr, beta1, beta2, eps, weight_decay, step, amsgrad, decoupled, maximize. Writes param and
// the state.
void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& args, Where where = Where::current());

}  // namespace ember::optim
