// The piecewise activations of nn/functional_activations_more.h: hardtanh, relu6, threshold,
// hardswish, hardsigmoid, celu, softshrink and hardshrink, as `where` over registry ops.
#include "runtime/nn/functional_activations_more.h"

#include <cmath>
#include <optional>

#include "runtime/nn/activation_composites.h"

namespace ember::nn::functional {

using detail::check_floating_input;
using detail::scalar_of;
using detail::to_computing_dtype;

Tensor hardtanh(const Tensor& input, double min_val, double max_val, Where where) {
  CallSiteScope site(where);
  check(input.dtype() != kBool, "hardtanh: bool inputs are not supported (shape {})", input.sizes());
  if (!is_floating(input.dtype())) return clamp(input, std::trunc(min_val), std::trunc(max_val));
  const Tensor x = to_computing_dtype(input);
  // PyTorch's hardtanh_backward zeroes the gradient where x <= min_val or x >= max_val: clamp's own
  // backward would pass it at the bounds. The bounded values carry no gradient.
  const Tensor at_or_past_bound = logical_or(le(x, scalar_of(min_val, x)), ge(x, scalar_of(max_val, x)));
  const Tensor bounded = clamp(x.detach(), min_val, max_val);
  return ember::where(at_or_past_bound, bounded, x).to(input.dtype());
}

Tensor relu6(const Tensor& input, Where where) {
  CallSiteScope site(where);
  return hardtanh(input, 0.0, 6.0, where);
}

Tensor threshold(const Tensor& input, double threshold, double value, Where where) {
  CallSiteScope site(where);
  check(input.dtype() != kBool, "threshold: bool inputs are not supported (shape {})", input.sizes());
  // PyTorch converts both numbers to the input's dtype (Scalar::to<scalar_t>), truncating for integers.
  const bool integral = !is_floating(input.dtype());
  const double limit = integral ? std::trunc(threshold) : threshold;
  const double replacement = integral ? std::trunc(value) : value;
  // Compared in the input's own dtype: a bf16 input meets the threshold rounded to bf16.
  const Tensor replaced = le(input, scalar_of(limit, input));
  return ember::where(replaced, scalar_of(replacement, input), input);
}

Tensor hardswish(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check_floating_input("hardswish", input);
  const Tensor x = to_computing_dtype(input);
  // Three sides, as PyTorch's hardswish_backward: 0 below -3; x (x + 3) / 6 on [-3, 3], whose
  // derivative is x / 3 + 1/2 at both ends; x 6 / 6 above 3 and at NaN (derivative 1). Each side has
  // the value of PyTorch's x min(max(x + 3, 0), 6) / 6 there, rounding included. The middle side
  // reads x clamped to [-3, 3], so an infinite x gives it no NaN gradient.
  const Tensor below = lt(x, scalar_of(-3.0, x));
  const Tensor middle_or_below = le(x, scalar_of(3.0, x));
  const Tensor three = scalar_of(3.0, x), six = scalar_of(6.0, x);
  const Tensor x_middle = clamp(x, -3.0, 3.0);
  const Tensor middle = div(mul(x_middle, add(x_middle, three)), six);
  const Tensor above = div(mul(x, six), six);
  const Tensor zero_below = mul(x.detach(), 0.0);  // -0.0 for finite x, NaN at -inf: PyTorch's x 0 / 6
  return ember::where(below, zero_below, ember::where(middle_or_below, middle, above)).to(input.dtype());
}

Tensor hardsigmoid(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check_floating_input("hardsigmoid", input);
  const Tensor x = to_computing_dtype(input);
  // PyTorch's hardsigmoid_backward passes 1/6 only where -3 < x < 3 (so not at NaN); outside, the
  // clamped value carries no gradient.
  const Tensor inside = logical_and(gt(x, scalar_of(-3.0, x)), lt(x, scalar_of(3.0, x)));
  const Tensor value = div(clamp(add(x, scalar_of(3.0, x)), 0.0, 6.0), scalar_of(6.0, x));
  return ember::where(inside, value, value.detach()).to(input.dtype());
}

Tensor celu(const Tensor& input, double alpha, Where where) {
  CallSiteScope site(where);
  check(alpha != 0.0, "celu: alpha cannot be 0 (it divides x), got alpha = {} (input shape {})", alpha, input.sizes());
  check_floating_input("celu", input);
  const Tensor x = to_computing_dtype(input);
  // PyTorch's elu with input_scale 1 / alpha: the negative side multiplies by the reciprocal. It reads
  // min(x, 0), so a large positive x overflows nothing on the side not taken. Gradient e^(x / alpha)
  // up to and at 0, as elu_backward (x <= 0).
  const Tensor x_negative = clamp(x, std::nullopt, 0.0);
  const Tensor negative = mul(expm1(mul(x_negative, scalar_of(1.0 / alpha, x))), scalar_of(alpha, x));
  return ember::where(gt(x, scalar_of(0.0, x)), x, negative).to(input.dtype());
}

Tensor softshrink(const Tensor& input, double lambd, Where where) {
  CallSiteScope site(where);
  check(lambd >= 0.0, "softshrink: lambda must be greater or equal to 0, but found to be {} (input shape {})", lambd,
        input.sizes());
  check_floating_input("softshrink", input);
  const Tensor x = to_computing_dtype(input);
  const Tensor lambda = scalar_of(lambd, x);
  // PyTorch's shrink_backward: gradient 0 where -lambd <= x <= lambd; NaN falls to x + lambd.
  const Tensor inside = logical_and(ge(x, neg(lambda)), le(x, lambda));
  const Tensor shifted = ember::where(gt(x, lambda), sub(x, lambda), add(x, lambda));
  return ember::where(inside, scalar_of(0.0, x), shifted).to(input.dtype());
}

Tensor hardshrink(const Tensor& input, double lambd, Where where) {
  CallSiteScope site(where);
  check_floating_input("hardshrink", input);
  // PyTorch's kernel converts lambd to the input's dtype (bf16 included) and compares there.
  const Tensor lambda = scalar_of(lambd, input);
  const Tensor inside = logical_and(ge(input, neg(lambda)), le(input, lambda));
  return ember::where(inside, scalar_of(0.0, input), input);
}

}  // namespace ember::nn::functional
