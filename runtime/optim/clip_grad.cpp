// clip_grad_norm_, its halves get_total_norm and clip_grads_with_norm_, and clip_grad_value_:
// per-gradient partial norms in float64 on the gradients' device, summed there; only
// clip_grad_norm_ (which returns a double, as libtorch's does) reads the total on the host.
#include "runtime/optim/clip_grad.h"

#include <cmath>
#include <limits>
#include <string>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::nn::utils {

namespace {

// sum(|g|^p) of one gradient as a 0-d float64 tensor; max |g| for p = infinity, min |g| for
// -infinity, and for p = 0 whether the gradient holds a non-zero element (1 or 0): PyTorch's total
// 0-norm is the 0-norm of the gradients' 0-norms, so it counts gradients, not elements. A NaN is
// non-zero there, as in torch.linalg.vector_norm.
Tensor partial_norm(const Tensor& grad, double norm_type) {
  const Tensor values = grad.to(kFloat64);
  if (norm_type == std::numeric_limits<double>::infinity()) return amax(abs(values));
  if (norm_type == -std::numeric_limits<double>::infinity()) return amin(abs(values));
  if (norm_type == 0.0) {
    const Tensor zero = zeros({}, {.dtype = kFloat64, .device = values.device()});
    return ne(amax(abs(values)), zero).to(kFloat64);
  }
  if (norm_type == 2.0) return sum(mul(values, values));
  if (norm_type == 1.0) return sum(abs(values));
  return sum(pow(abs(values), norm_type));
}

void check_norm_type(double norm_type, const char* function) {
  check(!std::isnan(norm_type), "{}: norm_type must be a number (any p, or +-infinity), got {}", function, norm_type);
}

// PyTorch takes vector_norm of every tensor, which refuses an empty one for the norms whose
// reduction (max for infinity, min for -infinity and p < 0) has no identity: "cannot compute the
// inf norm on an empty tensor". Skipping it would clip by the other tensors alone. `what` names
// the tensor ("tensor 3", "the gradient of parameter 3").
void check_norm_of_empty(const Tensor& tensor, double norm_type, const char* function, const std::string& what) {
  const bool has_identity = norm_type >= 0.0 && !std::isinf(norm_type);
  check(has_identity || tensor.numel() != 0,
        "{}: {} (shape {}) is empty, and the norm of order {} of an empty tensor has no value (its max or min "
        "has no identity), as in torch.linalg.vector_norm",
        function, what, tensor.sizes(), norm_type);
}

// `function`: the one the user called (get_total_norm or clip_grad_norm_), which the error names.
void check_finite(double norm, double norm_type, const char* function) {
  check(std::isfinite(norm),
        "{}: the total norm of order {} of the gradients is non-finite ({}), so it cannot be clipped; "
        "pass error_if_nonfinite = false to scale by it anyway",
        function, norm_type, norm);
}

// The partial norms of every tensor combined, on the first one's device: summed, or the largest
// (p = infinity) or smallest (-infinity); undefined when no tensor has elements.
Tensor accumulated_powers(const std::vector<Tensor>& tensors, double norm_type) {
  Tensor total;
  for (const Tensor& tensor : tensors) {
    if (!tensor.defined() || tensor.numel() == 0) continue;
    Tensor part = partial_norm(tensor, norm_type);
    if (!total.defined()) {
      total = part;
      continue;
    }
    part = part.to(total.device());
    if (!std::isinf(norm_type)) total = add(total, part);
    else total = norm_type > 0.0 ? maximum(total, part) : minimum(total, part);
  }
  return total;
}

// A parameter without a .grad is skipped; a compiled caller is told (notify_grad_absent), so that
// a replay recompiles once it has one instead of leaving it unclipped.
std::vector<Tensor> gradients_of(const std::vector<Tensor>& parameters, const char* function) {
  std::vector<Tensor> grads;
  for (const Tensor& param : parameters) {
    check(param.defined(), "{}: a parameter is an undefined tensor", function);
    if (param.grad().defined()) grads.push_back(param.grad());
    else notify_grad_absent(param);
  }
  return grads;
}

}  // namespace

Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type, bool error_if_nonfinite, Where where) {
  CallSiteScope site(where);
  check_norm_type(norm_type, "get_total_norm");
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].defined()) check_norm_of_empty(tensors[i], norm_type, "get_total_norm", fmt::format("tensor {}", i));
  NoGradGuard no_grad;
  const Tensor total = accumulated_powers(tensors, norm_type);
  if (!total.defined()) return zeros({}, {.dtype = kFloat64});
  // Infinity, 1 and 0 (a count) need no root.
  const Tensor norm = std::isinf(norm_type) || norm_type == 1.0 || norm_type == 0.0 ? total
                      : norm_type == 2.0                                            ? sqrt(total)
                                                                                    : pow(total, 1.0 / norm_type);
  if (error_if_nonfinite) check_finite(norm.item(), norm_type, "get_total_norm");
  return norm;
}

void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm, const Tensor& total_norm,
                           Where where) {
  CallSiteScope site(where);
  check(max_norm >= 0.0, "clip_grads_with_norm_: max_norm must be non-negative, got {}", max_norm);
  check(total_norm.defined() && total_norm.numel() == 1,
        "clip_grads_with_norm_: total_norm must hold one value (get_total_norm's result), got shape {}",
        total_norm.defined() ? total_norm.sizes() : Dims{});
  NoGradGuard no_grad;
  // Multiplied unconditionally, as PyTorch does: a scale of 1 changes nothing, and a NaN norm
  // makes every gradient NaN rather than leaving them silently unclipped.
  // scalar_like: a max_norm past a 16-bit norm's range is inf there, as PyTorch's max_norm / norm.
  const Tensor limit = ops::scalar_like(max_norm, total_norm);
  const Tensor scale = clamp(div(limit, add(total_norm, 1e-6)), std::nullopt, 1.0);
  for (Tensor& grad : gradients_of(parameters, "clip_grads_with_norm_"))
    mul_(grad, scale.to(grad.device()).to(grad.dtype()));
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite, Where where) {
  CallSiteScope site(where);
  check_norm_type(norm_type, "clip_grad_norm_");
  check(max_norm >= 0.0, "clip_grad_norm_: max_norm must be non-negative, got {}", max_norm);
  for (size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].defined() && parameters[i].grad().defined())
      check_norm_of_empty(parameters[i].grad(), norm_type, "clip_grad_norm_",
                          fmt::format("the gradient of parameter {}", i));
  NoGradGuard no_grad;
  std::vector<Tensor> grads = gradients_of(parameters, "clip_grad_norm_");
  const double norm = get_total_norm(grads, norm_type).item();  // libtorch returns a double too
  if (error_if_nonfinite) check_finite(norm, norm_type, "clip_grad_norm_");
  const double coefficient = max_norm / (norm + 1e-6);
  // Written so that a NaN coefficient scales too (PyTorch multiplies unconditionally).
  if (!(coefficient >= 1.0))
    for (Tensor& grad : grads) mul_(grad, coefficient);
  return norm;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value, Where where) {
  CallSiteScope site(where);
  check(clip_value >= 0.0, "clip_grad_value_: clip_value must be non-negative, got {}", clip_value);
  NoGradGuard no_grad;
  for (const Tensor& param : parameters) {
    check(param.defined(), "clip_grad_value_: a parameter is an undefined tensor");
    Tensor grad = param.grad();
    if (grad.defined()) copy_(grad, clamp(grad, -clip_value, clip_value));
    else notify_grad_absent(param);
  }
}

}  // namespace ember::nn::utils
