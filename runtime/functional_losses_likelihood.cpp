// The negative log-likelihood losses of a distribution in PyTorch's formulas
// (torch.nn.functional): poisson_nll_loss and gaussian_nll_loss. Composites of registry ops.
#include <cmath>
#include <numbers>

#include "runtime/autocast_composites.h"
#include "runtime/dispatch.h"
#include "runtime/functional_losses_more.h"
#include "runtime/loss_reduction.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using detail::autocast_to_float32;
using ops::scalar_like;

// A floating input; the target may be any numbers (integer counts too: the ops promote them).
void check_input_and_target(const char* function, const Tensor& input, const Tensor& target) {
  check(input.defined() && is_floating(input.dtype()), "{}: input must be a floating-point tensor, got {}", function,
        input.defined() ? std::string(dtype_name(input.dtype())) : std::string("an undefined tensor"));
  check(target.defined(), "{}: target is an undefined tensor", function);
  broadcast_shapes(input.sizes(), target.sizes(), function);
}

// PyTorch's Stirling term, y log y - y + 0.5 log(2 pi y), masked to 0 where y <= 1 (a NaN target
// keeps its NaN). The masked elements take y = 2 inside, so that log's gradient there is not
// 0 * inf = NaN. Differs from PyTorch at y = 0 exactly: its masked_fill passes 0 into y log y and
// log(2 pi y), whose backward gives 0 * -inf and 0 / 0, a NaN target gradient; here it is 0.
Tensor stirling_term(const Tensor& y) {
  const Tensor counted = logical_not(le(y, scalar_like(1.0, y)));
  const Tensor inside = ember::where(counted, y, scalar_like(2.0, y));
  const Tensor term = add(sub(mul(inside, log(inside)), inside), mul(log(mul(inside, 2.0 * std::numbers::pi)), 0.5));
  return ember::where(counted, term, scalar_like(0.0, term));
}

// A shape without its last dim (a 0-d shape stays empty, as Python's size()[:-1]).
Dims leading_dims(const Dims& sizes) {
  return Dims(std::span<const int64_t>(sizes.begin(), sizes.size() == 0 ? 0 : sizes.size() - 1));
}

// var as PyTorch's gaussian_nll_loss takes it, in its order of checks: the input's shape; the
// input's without its last dim (one variance per sample: unsqueezed); or the same leading dims
// and a last dim of 1.
Tensor variance_of_shape(const Tensor& var, const Tensor& input) {
  const Dims& sizes = input.sizes();
  if (var.sizes() == sizes) return var;
  const Dims leading = leading_dims(sizes);
  if (var.sizes() == leading) return var.unsqueeze(-1);
  const bool one_per_sample =
      var.dim() > 0 && var.sizes()[var.dim() - 1] == 1 && leading_dims(var.sizes()) == leading;
  check(one_per_sample,
        "gaussian_nll_loss: var must have the input's shape {}, or it without the last dim, or with a last dim "
        "of 1; got {}", sizes, var.sizes());
  return var;
}

}  // namespace

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, PoissonNLLLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "poisson_nll_loss";
  check_reduction(function, options.reduction);
  check_input_and_target(function, input, target);
  const Tensor x = autocast_to_float32(input), y = autocast_to_float32(target);
  Tensor losses = options.log_input ? sub(exp(x), mul(y, x)) : sub(x, mul(y, log(add(x, options.eps))));
  if (options.full) losses = add(losses, stirling_term(y));
  return reduce_loss(losses, options.reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, GaussianNLLLossOptions options,
                         Where where) {
  CallSiteScope site(where);
  const char* function = "gaussian_nll_loss";
  check_reduction(function, options.reduction);
  check_input_and_target(function, input, target);
  check(var.defined() && is_floating(var.dtype()), "{}: var must be a floating-point tensor", function);
  const Tensor shaped = variance_of_shape(var, input);
  // PyTorch reads the values here too; outside the CPU eager path a read would wait for the
  // device or break a capture, so there negative variances are clamped like small ones.
  if (shaped.numel() > 0 && shaped.device().is_cpu() && !dispatch_mode_active()) {
    NoGradGuard no_grad;
    const double lowest = amin(shaped).item();
    check(!(lowest < 0.0), "{}: var has negative entries (the smallest is {})", function, lowest);
  }
  const Tensor x = autocast_to_float32(input), y = autocast_to_float32(target), v = autocast_to_float32(shaped);
  // PyTorch clamps a clone of var in place under no_grad: the value is max(var, eps) and the
  // gradient passes to var as if there were no clamp. v - v.detach() is 0 carrying that gradient.
  const Tensor clamped =
      ember::where(lt(v, scalar_like(options.eps, v)), add(sub(v, v.detach()), options.eps), v);
  const Tensor difference = sub(x, y);
  Tensor losses = mul(add(log(clamped), div(mul(difference, difference), clamped)), 0.5);
  if (options.full) losses = add(losses, 0.5 * std::log(2.0 * std::numbers::pi));
  return reduce_loss(losses, options.reduction);
}

}  // namespace ember
