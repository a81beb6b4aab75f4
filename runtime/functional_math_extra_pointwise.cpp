// xlogy, sinc, heaviside, frac, logit and isin (runtime/functional_math_extra.h) from where, log,
// sin, trunc, clamp and eq. Where a branch divides by zero or takes the log of zero, the input of
// that branch is first replaced by a harmless value, so that where's zero gradient is not turned
// into NaN by the branch's own backward (0 * inf).
#include <cmath>
#include <numbers>

#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

bool is_16bit(DType dtype) { return dtype == kBFloat16 || dtype == kFloat16; }

// The floating dtype a result takes: integers and bool become float32 (torch's default dtype).
DType floating_of(DType dtype) { return is_floating(dtype) ? dtype : kFloat32; }

// The inputs of a floating op converted to the type it is computed in: 16-bit values in float32
// (torch's opmath type), so the result is rounded once.
Tensor in_computing_type(const Tensor& a, DType result) {
  const DType computing = is_16bit(result) ? kFloat32 : result;
  return a.dtype() == computing ? a : to_dtype(a, computing);
}

Tensor rounded_to(const Tensor& a, DType result) { return a.dtype() == result ? a : to_dtype(a, result); }

Tensor xlogy_of(const Tensor& x, const Tensor& y, DType result) {
  const Tensor xs = in_computing_type(x, result), ys = in_computing_type(y, result);
  const Tensor x_zero = eq(xs, scalar_like(0.0, xs));
  // log(1) = 0 where x == 0, so neither log(0) = -inf nor log(-1) = NaN reaches the gradient.
  const Tensor safe_y = ember::where(x_zero, scalar_like(1.0, ys), ys);
  Tensor value = ember::where(x_zero, scalar_like(0.0, xs), mul(xs, log(safe_y)));
  value = where(isnan(ys), ys, value);  // torch: a NaN y wins over x == 0
  return rounded_to(value, result);
}

}  // namespace

Tensor xlogy(const Tensor& x, const Tensor& y, Where where) {
  CallSiteScope site(where);
  check(x.device() == y.device(), "xlogy: expected both inputs on one device, got {} and {}", x.device(), y.device());
  return xlogy_of(x, y, floating_of(result_type(x.dtype(), x.dim() == 0, y.dtype(), y.dim() == 0)));
}

Tensor xlogy(const Tensor& x, double y, Where where) {
  CallSiteScope site(where);
  const DType result = floating_of(x.dtype());
  return xlogy_of(x, scalar_tensor(y, {.dtype = result, .device = x.device()}), result);
}

Tensor xlogy(double x, const Tensor& y, Where where) {
  CallSiteScope site(where);
  const DType result = floating_of(y.dtype());
  return xlogy_of(scalar_tensor(x, {.dtype = result, .device = y.device()}), y, result);
}

Tensor sinc(const Tensor& x, Where where) {
  CallSiteScope site(where);
  const DType result = floating_of(x.dtype());
  const Tensor xs = in_computing_type(x, result);
  const Tensor x_zero = eq(xs, scalar_like(0.0, xs));
  // pi x in the computing type, as torch's kernel; 1 stands in for x at 0 (sin(pi) / pi is finite).
  const Tensor product = mul(ember::where(x_zero, scalar_like(1.0, xs), xs), std::numbers::pi);
  return rounded_to(ember::where(x_zero, scalar_like(1.0, xs), div(sin(product), product)), result);
}

Tensor heaviside(const Tensor& x, const Tensor& values, Where where) {
  CallSiteScope site(where);
  check(x.dtype() == values.dtype(),
        "heaviside: is not yet implemented for tensors with different dtypes, got {} and {} (shapes {} and {})",
        x.dtype(), values.dtype(), x.sizes(), values.sizes());
  const Tensor positive = to_dtype(gt(x, scalar_like(0.0, x)), x.dtype());
  return ember::where(eq(x, scalar_like(0.0, x)), values, positive);
}

Tensor frac(const Tensor& x, Where where) {
  CallSiteScope site(where);
  check(is_floating(x.dtype()),
        "frac: expected a floating-point tensor, got {} (shape {}); torch's frac has no {} kernel", x.dtype(),
        x.sizes(), x.dtype());
  return sub(x, trunc(x));
}

Tensor logit(const Tensor& x, std::optional<double> eps, Where where) {
  CallSiteScope site(where);
  const DType result = floating_of(x.dtype());
  // torch clamps in the input's floating dtype (a negative eps means no clamp).
  Tensor z = rounded_to(x, result);
  if (eps && *eps >= 0.0) z = clamp(z, *eps, 1.0 - *eps);
  const Tensor zs = in_computing_type(z, result);
  return rounded_to(log(div(zs, rsub(zs, 1.0))), result);
}

Tensor isin(const Tensor& elements, const Tensor& test_elements, bool assume_unique, bool invert, Where where) {
  CallSiteScope site(where);
  check(elements.device() == test_elements.device(), "isin: expected both inputs on one device, got {} and {}",
        elements.device(), test_elements.device());
  // [..., 1] == [T]: any over the last dim, computed without host reads so a compiled step keeps it.
  const Tensor tests = reshape(test_elements, {test_elements.numel()});
  const Tensor found = any(eq(unsqueeze(elements, elements.dim()), tests), -1);
  return invert ? logical_not(found) : found;
}

Tensor isin(const Tensor& elements, double test_element, bool assume_unique, bool invert, Where where) {
  CallSiteScope site(where);
  // A host number is torch's wrapped scalar: a floating tensor compares in its dtype, an integral
  // one (bool too) with an integral number as an integer (bool then widens to int64), with a
  // fraction in float32.
  const bool fraction = !std::isfinite(test_element) || test_element != std::trunc(test_element);
  const DType test_dtype = is_floating(elements.dtype()) ? elements.dtype() : fraction ? kFloat32 : kInt64;
  const Tensor test = scalar_tensor(test_element, {.dtype = test_dtype, .device = elements.device()});
  const Tensor found = eq(elements, test);
  return invert ? logical_not(found) : found;
}

}  // namespace ember
