// clip_grad_norm_ and clip_grad_value_: per-gradient partial norms in float64 on the gradients'
// device, summed there, one host read of the total.
#include "runtime/optim/clip_grad.h"

#include <cmath>
#include <limits>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::nn::utils {

namespace {

// sum(|g|^p) (or max |g| for p = infinity) of one gradient, as a 0-d float64 tensor.
Tensor partial_norm(const Tensor& grad, double norm_type) {
  const Tensor values = grad.to(kFloat64);
  if (std::isinf(norm_type)) return amax(abs(values));
  if (norm_type == 2.0) return sum(mul(values, values));
  if (norm_type == 1.0) return sum(abs(values));
  return sum(pow(abs(values), norm_type));
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  check(norm_type > 0.0, "clip_grad_norm_: norm_type must be positive or infinity, got {}", norm_type);
  check(max_norm >= 0.0, "clip_grad_norm_: max_norm must be non-negative, got {}", max_norm);
  const bool infinity_norm = std::isinf(norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  Tensor total;
  for (const Tensor& param : parameters) {
    check(param.defined(), "clip_grad_norm_: a parameter is an undefined tensor");
    Tensor grad = param.grad();
    if (!grad.defined()) continue;
    grads.push_back(grad);
    if (grad.numel() == 0) continue;
    Tensor part = partial_norm(grad, norm_type);
    if (total.defined()) part = part.to(total.device());
    total = !total.defined() ? part : infinity_norm ? maximum(total, part) : add(total, part);
  }
  if (!total.defined()) return 0.0;
  const double accumulated = total.item();
  const double norm = infinity_norm || norm_type == 1.0 ? accumulated
                      : norm_type == 2.0               ? std::sqrt(accumulated)
                                                       : std::pow(accumulated, 1.0 / norm_type);
  check(!error_if_nonfinite || std::isfinite(norm),
        "clip_grad_norm_: the total norm of order {} of the gradients is non-finite ({}), so it cannot be clipped; "
        "pass error_if_nonfinite = false to scale by it anyway",
        norm_type, norm);
  const double coefficient = max_norm / (norm + 1e-6);
  // Written so that a NaN coefficient scales too (PyTorch multiplies unconditionally).
  if (!(coefficient >= 1.0))
    for (Tensor& grad : grads) mul_(grad, coefficient);
  return norm;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  check(clip_value >= 0.0, "clip_grad_value_: clip_value must be non-negative, got {}", clip_value);
  NoGradGuard no_grad;
  for (const Tensor& param : parameters) {
    check(param.defined(), "clip_grad_value_: a parameter is an undefined tensor");
    Tensor grad = param.grad();
    if (grad.defined()) copy_(grad, clamp(grad, -clip_value, clip_value));
  }
}

}  // namespace ember::nn::utils
