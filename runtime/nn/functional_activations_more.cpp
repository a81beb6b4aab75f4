// The piecewise activations of nn/functional_activations_more.h: hardtanh, relu6, hardswish and
// hardsigmoid call their registry ops (runtime/ops/activation_more_ops.cpp); threshold, celu,
// softshrink and hardshrink are `where` over registry ops.
#include "runtime/nn/functional_activations_more.h"

#include <cmath>
#include <optional>

#include "runtime/dispatch.h"
#include "runtime/nn/activation_composites.h"

namespace ember::nn::functional {

using detail::check_floating_input;
using detail::scalar_of;
using detail::to_computing_dtype;

Tensor hardtanh(const Tensor& input, double min_val, double max_val, Where where) {
  CallSiteScope site(where);
  // torch.nn.functional.hardtanh's own check (PyTorch 2.3 on), before the dtype is looked at; a NaN
  // bound passes it and makes every element NaN, as aten::hardtanh (clamp) does.
  check(!(min_val > max_val),
        "hardtanh: min_val cannot be greater than max_val, got min_val = {} and max_val = {} (input shape {})", min_val,
        max_val, input.sizes());
  check(input.dtype() != kBool, "hardtanh: bool inputs are not supported (shape {})", input.sizes());
  if (!is_floating(input.dtype())) {
    // aten::hardtanh converts the bounds with Scalar::toLong(), which refuses NaN, the infinities and
    // magnitudes past int64 (2^63 is the first double past it); truncated bounds never promote the input.
    const auto fits_int64 = [](double bound) { return bound >= -0x1p63 && bound < 0x1p63; };
    check(fits_int64(min_val) && fits_int64(max_val),
          "hardtanh: the bounds of an integer input are converted to int64, which cannot hold min_val = {} and "
          "max_val = {} (input {} of shape {})",
          min_val, max_val, input.dtype(), input.sizes());
    return clamp(input, std::trunc(min_val), std::trunc(max_val));
  }
  // torch.clamp's values; hardtanh_backward zeroes the gradient at the bounds, where clamp's passes it.
  static const OpDef& op = lookup_op("hardtanh");
  return dispatch_one(op, {input}, {{"min_val", min_val}, {"max_val", max_val}});
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
  static const OpDef& op = lookup_op("hardswish");
  return dispatch_one(op, {input});
}

Tensor hardsigmoid(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check_floating_input("hardsigmoid", input);
  static const OpDef& op = lookup_op("hardsigmoid");
  return dispatch_one(op, {input});
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
