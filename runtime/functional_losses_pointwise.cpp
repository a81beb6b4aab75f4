// The elementwise losses, composites of registry ops in PyTorch's formulas: l1_loss,
// smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits) and kl_div. Their gradients are
// autograd's through those ops; where an unused branch of a ember::where() would give 0 * inf = NaN in
// its gradient, the branch is computed on a harmless value instead.
#include <cmath>

#include "runtime/autocast_composites.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/loss_reduction.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using detail::autocast_to_float32;
using ops::scalar_like;

// Floating input and target that broadcast together; the ops promote them to a common dtype
// (PyTorch's result_type), so float32 with float64 computes in float64.
void check_loss_inputs(const char* function, const Tensor& input, const Tensor& target) {
  check(is_floating(input.dtype()) && is_floating(target.dtype()),
        "{}: expected floating-point input and target, got {} and {}", function, input.dtype(), target.dtype());
  broadcast_shapes(input.sizes(), target.sizes(), function);
}

// l1_loss, smooth_l1_loss and kl_div also take an integer target (counts, labels): PyTorch's
// (input - target).abs(), promoting binary op and xlogy(target, target) - target * input compute
// it as floating, gradients included. l1_loss's subtraction refuses bool, and so does this for
// all three (PyTorch's smooth_l1_loss and kl_div would take it as 0 and 1). (huber_loss and mse_loss
// compute forward but their backward kernels refuse the mix; the binary cross entropies refuse it.)
void check_input_and_numeric_target(const char* function, const Tensor& input, const Tensor& target) {
  check(is_floating(input.dtype()) && target.dtype() != kBool,
        "{}: expected a floating-point input and a floating-point or integer target, got {} and {}", function,
        input.dtype(), target.dtype());
  broadcast_shapes(input.sizes(), target.sizes(), function);
}

// The binary cross entropies take a target of the input's shape, as PyTorch requires.
void check_same_shape(const char* function, const Tensor& input, const Tensor& target) {
  check(input.sizes() == target.sizes(), "{}: target shape {} must be the same as the input shape {}", function,
        target.sizes(), input.sizes());
}

// An optional weight multiplies the losses in place in PyTorch, so it must broadcast to the
// input's shape without enlarging it.
void check_broadcasts_to(const char* function, const char* what, const Tensor& tensor, const Dims& shape) {
  if (!tensor.defined()) return;
  bool fits = tensor.dim() <= shape.size() && is_floating(tensor.dtype());
  for (int i = 1; fits && i <= tensor.dim(); ++i) {
    const int64_t size = tensor.sizes()[tensor.dim() - i];
    fits = size == 1 || size == shape[shape.size() - i];
  }
  check(fits, "{}: {} must be floating-point and broadcast to the input's shape {}, got {} of shape {}", function,
        what, shape, tensor.dtype(), tensor.sizes());
}

// PyTorch's CPU kernel refuses values outside [0, 1] (NaN too). Finding them costs a read on the
// host, which is cheap only for CPU tensors outside a capture: there a read would break the
// graph, and on CUDA it would wait for the device (PyTorch's CUDA kernel asserts there instead).
void check_probabilities(const Tensor& values, const char* what) {
  if (values.numel() == 0 || !values.device().is_cpu() || dispatch_mode_active()) return;
  NoGradGuard no_grad;
  const double lowest = amin(values).item();
  const double highest = amax(values).item();
  check(lowest >= 0.0 && highest <= 1.0,
        "binary_cross_entropy: all elements of {} should be between 0 and 1, got values from {} to {} (shape {})",
        what, lowest, highest, values.sizes());
}

// max(log(x), -100), or max(log1p(x), -100) with `plus_one`: PyTorch's clamp keeps the loss
// finite where x is 0 (or 1 for the log of 1 - x). At the pole log's backward is 0 / 0 = NaN even
// though the clamp passes it no gradient, so those elements take the log of a harmless value.
Tensor clamped_log(const Tensor& x, bool plus_one) {
  const double pole = plus_one ? -1.0 : 0.0;
  const Tensor at_pole = eq(x, scalar_like(pole, x));
  const Tensor harmless = ember::where(at_pole, scalar_like(pole + 1.0, x), x);
  const Tensor logged = clamp(plus_one ? log1p(harmless) : log(harmless), -100.0, std::nullopt);
  return ember::where(at_pole, scalar_like(-100.0, logged), logged);
}

// A term that is 0 and whose derivatives in x are PyTorch's backward of binary_cross_entropy,
// g = (x - y) / max(x (1 - x), 1e-12), and its double backward, h = (x^2 - 2 x y + y) /
// ((x + 1e-12)^2 (1 - x + 1e-12)^2): d g + d^2 h / 2 with d = x - x.detach() (0, of derivative
// 1) and g, h of the detached x. g is computed as one quotient, not as the sum -y/x + (1-y)/(1-x)
// whose terms cancel where y is near x. It runs in float32 at least, where 1e-12 and 1e24 are
// normal numbers (in float16 they are not), and the caller rounds the 0 back.
Tensor bce_input_derivatives(const Tensor& x, const Tensor& y) {
  constexpr double kEpsilon = 1e-12;
  const DType dtype = promote_types(promote_types(x.dtype(), y.dtype()), kFloat32);
  const Tensor wide = to_dtype(x, dtype), fixed = wide.detach(), y_wide = to_dtype(y, dtype);
  const Tensor step = sub(wide, fixed);
  const Tensor first = div(sub(fixed, y_wide), clamp(mul(fixed, rsub(fixed, 1.0)), kEpsilon, std::nullopt));
  const Tensor numerator = add(sub(mul(fixed, fixed), mul(mul(fixed, y_wide), 2.0)), y_wide);
  // (1 - x) + eps, not (1 + eps) - x: 1 + 1e-12 is 1 in float32, and h at x = 1 would be 1 / 0.
  const Tensor near_zero = add(fixed, kEpsilon), near_one = add(rsub(fixed, 1.0), kEpsilon);
  const Tensor second = div(numerator, mul(mul(near_zero, near_zero), mul(near_one, near_one)));
  return add(mul(step, first), mul(mul(mul(step, step), second), 0.5));
}

// The losses of smooth_l1 and huber: quadratic(|d|) below `threshold`, linear(|d|) from it on. The
// quadratic branch squares the distance clamped to the threshold: where that branch is not taken
// an infinite distance would otherwise give 0 * inf = NaN in its gradient.
Tensor distance_below(const Tensor& distance, double threshold) {
  return clamp(distance, std::nullopt, threshold);
}

}  // namespace

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, Where where) {
  CallSiteScope site(where);
  check_reduction("l1_loss", reduction);
  check_input_and_numeric_target("l1_loss", input, target);
  return reduce_loss(abs(sub(autocast_to_float32(input), autocast_to_float32(target))), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta, Where where) {
  CallSiteScope site(where);
  check_reduction("smooth_l1_loss", reduction);
  check_input_and_numeric_target("smooth_l1_loss", input, target);
  check(beta >= 0.0, "smooth_l1_loss: beta must be non-negative, got {}", beta);
  const Tensor distance = abs(sub(autocast_to_float32(input), autocast_to_float32(target)));
  if (beta == 0.0) return reduce_loss(distance, reduction);  // PyTorch's l1_loss
  const Tensor near = distance_below(distance, beta);
  const Tensor quadratic = div(mul(mul(near, near), 0.5), beta);
  const Tensor linear = sub(distance, 0.5 * beta);
  return reduce_loss(ember::where(lt(distance, scalar_like(beta, distance)), quadratic, linear), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta, Where where) {
  CallSiteScope site(where);
  check_reduction("huber_loss", reduction);
  check_loss_inputs("huber_loss", input, target);
  check(delta > 0.0, "huber_loss: delta must be positive, got {}", delta);
  const Tensor x = autocast_to_float32(input);
  const Tensor distance = abs(sub(x, autocast_to_float32(target)));
  const Tensor near = distance_below(distance, delta);
  const Tensor quadratic = mul(mul(near, near), 0.5);
  const Tensor linear = mul(sub(distance, 0.5 * delta), delta);
  // PyTorch computes in the common dtype into empty_like(input): the losses take the input's
  // dtype (float32 with a float64 target), unlike its promoting l1_loss and smooth_l1_loss.
  const Tensor losses = ember::where(lt(distance, scalar_like(delta, distance)), quadratic, linear);
  return reduce_loss(to_dtype(losses, x.dtype()), reduction);
}

// PyTorch's CPU formula: (y - 1) max(log1p(-x), -100) - y max(log x, -100), times the weight (in
// place: the loss keeps the input's and target's dtype). Its backward for x is not the formula's
// own derivative -y/x + (1 - y)/(1 - x), which overflows to -inf on a subnormal float32 x (a
// sigmoid below -88), but (x - y) / max(x (1 - x), 1e-12). So the value is the formula's at a
// detached x, and x's first and second derivatives come from a term that is 0
// (bce_input_derivatives). y's gradient is the clamped formula's, log(1 - x) - log(x): PyTorch's
// -logit(x) except where a log is clamped at -100 (x within e^-100 of 0 or 1: +-100, not +-inf).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction,
                            Where where) {
  CallSiteScope site(where);
  check_reduction("binary_cross_entropy", reduction);
  check_loss_inputs("binary_cross_entropy", input, target);
  check_same_shape("binary_cross_entropy", input, target);
  check_broadcasts_to("binary_cross_entropy", "weight", weight, input.sizes());
  check_probabilities(input, "input");
  check_probabilities(target, "target");
  // On PyTorch's CPU autocast float32 list (its CUDA autocast refuses the loss instead).
  const Tensor x = autocast_to_float32(input), y = autocast_to_float32(target), w = autocast_to_float32(weight);
  const Tensor fixed_x = x.detach();
  const Tensor log_input = clamped_log(fixed_x, false);
  const Tensor log_complement = clamped_log(neg(fixed_x), true);
  Tensor losses = sub(mul(sub(y, 1.0), log_complement), mul(y, log_input));
  if (x.requires_grad()) {
    losses = add(losses, to_dtype(bce_input_derivatives(x, y), losses.dtype()));
  }
  if (w.defined()) losses = to_dtype(mul(losses, w), losses.dtype());
  return reduce_loss(losses, reduction);
}

// PyTorch's form: (1 - y) x - (1 + (p - 1) y) log sigmoid(x), where log sigmoid(x) =
// -log(1 + exp(-x)) never overflows (log1p_exp), and has sigmoid's derivatives at x = 0 too.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        Reduction reduction, const Tensor& pos_weight, Where where) {
  CallSiteScope site(where);
  const char* function = "binary_cross_entropy_with_logits";
  check_reduction(function, reduction);
  check_loss_inputs(function, input, target);
  check_same_shape(function, input, target);
  check_broadcasts_to(function, "weight", weight, input.sizes());
  check_broadcasts_to(function, "pos_weight", pos_weight, input.sizes());
  const Tensor x = autocast_to_float32(input), y = autocast_to_float32(target);
  const Tensor w = autocast_to_float32(weight), positive_w = autocast_to_float32(pos_weight);
  Tensor log_sigmoid = neg(log1p_exp(neg(x)));
  // PyTorch computes (1 - target).mul_(input), then subtracts and weighs in place: the losses
  // take the target's dtype (float32 with a float64 input, float64 with a float32 one).
  const DType loss_dtype = y.dtype();
  if (positive_w.defined()) log_sigmoid = mul(log_sigmoid, add(mul(sub(positive_w, 1.0), y), 1.0));
  Tensor losses = to_dtype(sub(mul(rsub(y, 1.0), x), log_sigmoid), loss_dtype);
  if (w.defined()) losses = to_dtype(mul(losses, w), loss_dtype);
  return reduce_loss(losses, reduction);
}

// PyTorch's formulas: xlogy(y, y) - y x, or exp(y) (y - x) for log-space targets. xlogy(y, y) is
// 0 where y = 0; those elements take log(1) so that log's backward sees no 0 / 0. Differs from
// PyTorch there: its xlogy backward gives the target grad * y / y = NaN at y = 0; here the target's
// gradient at 0 is the -x of the second term only.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target, Where where) {
  CallSiteScope site(where);
  check_reduction("kl_div", reduction, true);
  check_input_and_numeric_target("kl_div", input, target);
  const Tensor x = autocast_to_float32(input), y = autocast_to_float32(target);
  Tensor losses;
  if (log_target) {
    losses = mul(exp(y), sub(y, x));
  } else {
    const Tensor zero_target = eq(y, scalar_like(0.0, y));
    const Tensor harmless = ember::where(zero_target, scalar_like(1.0, y), y);
    const Tensor entropy_terms = ember::where(zero_target, scalar_like(0.0, y), mul(y, log(harmless)));
    losses = sub(entropy_terms, mul(y, x));
  }
  if (reduction != Reduction::BatchMean) return reduce_loss(losses, reduction);
  // PyTorch divides by the batch size input.size(0) (0 / 0 = nan for an empty batch), and leaves
  // a 0-d input's sum as it is.
  const Tensor total = sum(losses);
  return input.dim() == 0 ? total : div(total, static_cast<double>(input.sizes()[0]));
}

}  // namespace ember
