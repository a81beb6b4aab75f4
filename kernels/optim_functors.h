// The per-element math of the fused optimizer steps, written once for the CPU kernel, CUDA and
// generated code. Each functor updates one parameter element and its state in registers, so a
// kernel reads and writes every array exactly once. T is the compute type (float for 16-bit
// parameters). The formulas follow PyTorch 1.13's _single_tensor_sgd / _single_tensor_adam(w)
// operation by operation, including where they round, with one exception: Adam multiplies by
// 1 / sqrt(1 - beta2^t) where PyTorch divides by sqrt(1 - beta2^t) (see AdamStep).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace ember::fn {

// SGD with momentum, dampening, Nesterov and L2 weight decay:
//   grad = -grad                                        (maximize: gradient ascent)
//   d = grad + weight_decay * param
//   buffer = d                                          (first step)
//   buffer = momentum * buffer + (1 - dampening) * d    (later steps)
//   d = nesterov ? d + momentum * buffer : buffer       (when momentum != 0)
//   param = param - lr * d
template <typename T>
struct SgdStep {
  T neg_lr;                 // -lr
  T momentum;
  T one_minus_dampening;    // 1 - dampening
  T weight_decay;
  bool use_momentum;        // momentum != 0: the buffer exists
  bool nesterov;
  bool first_step;          // the buffer is uninitialised and takes d
  bool maximize;            // ascend: negate the gradient first (exact, so maximizing f is minimizing -f)

  EMBER_HOST_DEVICE void operator()(T& param, T grad, T& buffer) const {
    T direction = maximize ? -grad : grad;
    if (weight_decay != T(0)) direction = direction + weight_decay * param;
    if (use_momentum) {
      buffer = first_step ? direction : buffer * momentum + one_minus_dampening * direction;
      direction = nesterov ? direction + momentum * buffer : buffer;
    }
    param = param + neg_lr * direction;
  }
};

// Adam (L2 decay folded into the gradient) and AdamW (decoupled decay of the parameter), with
// optional AMSGrad. At step t (1-based):
//   maximize: grad = -grad
//   AdamW: param = param * (1 - lr * weight_decay)      Adam: grad = grad + weight_decay * param
//   exp_avg    = beta1 * exp_avg    + (1 - beta1) * grad
//   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
//   AMSGrad: max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq), used below instead of exp_avg_sq
//   denom = sqrt(exp_avg_sq) * (1 / sqrt(1 - beta2^t)) + eps
//   param = param - (lr / (1 - beta1^t)) * exp_avg / denom
// The bias corrections are host scalars (computed in double, like PyTorch's Python floats).
// PyTorch divides sqrt(exp_avg_sq) by sqrt(1 - beta2^t); the multiply by the host reciprocal
// differs by at most an ulp or two of denom and takes one of the three divider operations per
// element off the CPU's divider, which bounds the step's speed (13.8 -> 10.0 us for the seed
// MLP's 28,426 parameters on Zen 3).
template <typename T>
struct AdamStep {
  T beta1;
  T beta2;
  T one_minus_beta1;
  T one_minus_beta2;
  T eps;
  T weight_decay;
  T decay_factor;           // 1 - lr * weight_decay (AdamW)
  T neg_step_size;          // -lr / (1 - beta1^t)
  T inv_bias_correction2_sqrt;  // 1 / sqrt(1 - beta2^t)
  bool amsgrad;
  bool decoupled;           // AdamW
  bool maximize;            // ascend: negate the gradient first

  EMBER_HOST_DEVICE void operator()(T& param, T grad, T& exp_avg, T& exp_avg_sq, T& max_exp_avg_sq) const {
    if (maximize) grad = -grad;
    if (decoupled) {
      param = param * decay_factor;
    } else if (weight_decay != T(0)) {
      grad = grad + weight_decay * param;
    }
    exp_avg = exp_avg * beta1 + one_minus_beta1 * grad;
    exp_avg_sq = exp_avg_sq * beta2 + one_minus_beta2 * grad * grad;
    T second_moment = exp_avg_sq;
    if (amsgrad) {
      // NaN propagates from either side, like torch.maximum.
      const bool keep = max_exp_avg_sq > exp_avg_sq || max_exp_avg_sq != max_exp_avg_sq;
      max_exp_avg_sq = keep ? max_exp_avg_sq : exp_avg_sq;
      second_moment = max_exp_avg_sq;
    }
    using std::sqrt;
    const T denom = sqrt(second_moment) * inv_bias_correction2_sqrt + eps;
    param = param + neg_step_size * exp_avg / denom;
  }
};

// The functors as the kernels build them from an op's attributes, for the compute type T: the
// host scalars (negated lr, bias corrections in double) are rounded to T once, here, so the CPU
// and CUDA kernels start every update from the same constants.
template <typename T>
SgdStep<T> make_sgd_step(double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                         bool first_step, bool maximize) {
  return SgdStep<T>{
      .neg_lr = static_cast<T>(-lr),
      .momentum = static_cast<T>(momentum),
      .one_minus_dampening = static_cast<T>(1.0 - dampening),
      .weight_decay = static_cast<T>(weight_decay),
      .use_momentum = momentum != 0.0,
      .nesterov = nesterov,
      .first_step = first_step,
      .maximize = maximize,
  };
}

template <typename T>
AdamStep<T> make_adam_step(double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step,
                           bool amsgrad, bool decoupled, bool maximize) {
  // Host scalars in double, as PyTorch computes them in Python floats.
  const double step_count = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(beta1, step_count);
  const double bias_correction2 = 1.0 - std::pow(beta2, step_count);
  return AdamStep<T>{
      .beta1 = static_cast<T>(beta1),
      .beta2 = static_cast<T>(beta2),
      .one_minus_beta1 = static_cast<T>(1.0 - beta1),
      .one_minus_beta2 = static_cast<T>(1.0 - beta2),
      .eps = static_cast<T>(eps),
      .weight_decay = static_cast<T>(weight_decay),
      .decay_factor = static_cast<T>(1.0 - lr * weight_decay),
      .neg_step_size = static_cast<T>(-(lr / bias_correction1)),
      .inv_bias_correction2_sqrt = static_cast<T>(1.0 / std::sqrt(bias_correction2)),
      .amsgrad = amsgrad,
      .decoupled = decoupled,
      .maximize = maximize,
  };
}

}  // namespace ember::fn
