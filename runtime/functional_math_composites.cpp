// fmax ... positive and addr, inner, dist (runtime/functional_math_composites.h) as composites of
// where, comparisons, pow, fmod, mul and tensordot, so the registry ops give autograd, CUDA and capture.
#include "runtime/functional_math_composites.h"

#include <cmath>
#include <numbers>

#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

DType result_type_of(const Tensor& a, const Tensor& b) {
  return result_type(a.dtype(), a.dim() == 0, b.dtype(), b.dim() == 0);
}

Tensor as_dtype(const Tensor& a, DType dtype) { return a.dtype() == dtype ? a : to_dtype(a, dtype); }

// a where `take_a` holds (or b is NaN, so a NaN loses to a number), else b, in the promoted dtype.
Tensor nan_ignoring_pick(const Tensor& a, const Tensor& b, const Tensor& take_a) {
  const DType dtype = result_type_of(a, b);
  return where(logical_or(take_a, isnan(b)), as_dtype(a, dtype), as_dtype(b, dtype));
}

// torch's div_floor for floating values: the quotient of a - fmod(a, b), which is exact, moved down
// by one where the remainder's sign differs from b's, then rounded to the nearest integer; a zero
// quotient keeps the sign of a / b and b == 0 gives a / b.
Tensor floor_divide_floating(const Tensor& a, const Tensor& b) {
  const Tensor mod = fmod(a, b);
  Tensor quotient = div(sub(a, mod), b);
  const Tensor zero = scalar_like(0.0, mod);
  const Tensor sign_differs = logical_and(ne(mod, zero), ne(lt(b, zero), lt(mod, zero)));
  quotient = where(sign_differs, sub(quotient, 1.0), quotient);
  Tensor floored = floor(quotient);
  floored = where(gt(sub(quotient, floored), scalar_like(0.5, quotient)), add(floored, 1.0), floored);
  const Tensor true_quotient = div(a, b);
  floored = where(eq(quotient, zero), mul(true_quotient, 0.0), floored);  // 0 * (a / b): 0 with its sign
  return where(eq(b, zero), true_quotient, floored);
}

}  // namespace

Tensor fmax(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  return nan_ignoring_pick(a, b, ge(a, b));
}

Tensor fmin(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  return nan_ignoring_pick(a, b, le(a, b));
}

Tensor float_power(const Tensor& a, const Tensor& exponent, Where where) {
  CallSiteScope site(where);
  return pow(as_dtype(a, kFloat64), as_dtype(exponent, kFloat64));
}

Tensor float_power(const Tensor& a, double exponent, Where where) {
  CallSiteScope site(where);
  return pow(as_dtype(a, kFloat64), exponent);
}

Tensor true_divide(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  return div(a, b);
}

Tensor true_divide(const Tensor& a, double b, Where where) {
  CallSiteScope site(where);
  return div(a, b);
}

Tensor floor_divide(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  check(a.dtype() != kBool && b.dtype() != kBool, "floor_divide: bool inputs are not supported (got {} and {})",
        a.dtype(), b.dtype());
  const DType dtype = result_type_of(a, b);
  const Tensor x = as_dtype(a.detach(), dtype), y = as_dtype(b.detach(), dtype);
  if (is_floating(dtype)) return floor_divide_floating(x, y);
  // torch raises ZeroDivisionError for an integer zero divisor; reading that is a host sync.
  check(!any(eq(y, scalar_like(0.0, y))).item(),
        "floor_divide: ZeroDivisionError, an integer divisor is 0 "
        "(shapes {} and {})",
        a.sizes(), b.sizes());
  // a - remainder(a, b) is an exact multiple of b, so its float64 quotient is exact below 2^53;
  // beyond, it is refused rather than rounded (the divisor check above already read the host).
  // Only int64 holds such values.
  if (dtype == kInt64) {
    const Tensor limit = scalar_like(9007199254740992.0, x);
    check(!any(logical_or(gt(x, limit), lt(x, neg(limit)))).item(),
          "floor_divide: an integer dividend beyond +-2^53 is not supported (shapes {} and {})", a.sizes(), b.sizes());
  }
  const Tensor multiple = sub(x, remainder(x, y));
  return to_dtype(round(div(as_dtype(multiple, kFloat64), as_dtype(y, kFloat64))), dtype);
}

Tensor floor_divide(const Tensor& a, double b, Where where) {
  const bool integral = !is_floating(a.dtype()) && std::trunc(b) == b;
  // A fractional value with an integer tensor is taken in float32, torch's default dtype.
  const DType dtype = integral ? kInt64 : (is_floating(a.dtype()) ? kFloat64 : kFloat32);
  const Tensor divisor = scalar_tensor(b, TensorOptions{.dtype = dtype, .device = a.device()});
  return floor_divide(a, divisor, where);
}

Tensor deg2rad(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return mul(a, std::numbers::pi / 180.0);
}

Tensor rad2deg(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return mul(a, 180.0 / std::numbers::pi);
}

Tensor signbit(const Tensor& a, Where where) {
  CallSiteScope site(where);
  if (a.dtype() == kBool) return ne(a, a);  // all false, in a's shape and device
  const Tensor x = a.detach();
  const Tensor zero = scalar_like(0.0, x);
  if (!is_floating(x.dtype())) return lt(x, zero);
  // -0.0 compares equal to 0.0; its reciprocal, -inf, carries the sign.
  return logical_or(lt(x, zero), logical_and(eq(x, zero), lt(reciprocal(x), zero)));
}

Tensor fix(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return trunc(a);
}

Tensor positive(const Tensor& a, Where where) {
  CallSiteScope site(where);
  check(a.dtype() != kBool, "positive: the `+` operator, on a bool tensor is not supported (shape {})", a.sizes());
  return a;
}

Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2, double beta, double alpha, Where where) {
  CallSiteScope site(where);
  check(vec1.dim() == 1 && vec2.dim() == 1, "addr: expected 1-D vec1 and vec2, got shapes {} and {}", vec1.sizes(),
        vec2.sizes());
  const DType dtype = promote_types(input.dtype(), promote_types(vec1.dtype(), vec2.dtype()));
  if (!is_floating(dtype)) {
    check(beta == std::trunc(beta) && alpha == std::trunc(alpha),
          "addr: for integral input tensors, beta and alpha must be integral, got beta={} alpha={}", beta, alpha);
  }
  const Dims shape{vec1.size(0), vec2.size(0)};
  check(input.dim() <= 2, "addr: input of shape {} cannot broadcast to the outer product's {}", input.sizes(), shape);
  const Tensor product = mul(unsqueeze(as_dtype(vec1, dtype), 1), unsqueeze(as_dtype(vec2, dtype), 0));
  const Tensor scaled_product = alpha == 1.0 ? product : mul(product, alpha);
  if (beta == 0.0) return scaled_product;
  const Tensor scaled_input = beta == 1.0 ? as_dtype(input, dtype) : mul(as_dtype(input, dtype), beta);
  return add(expand(scaled_input, shape), scaled_product);
}

Tensor inner(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  if (a.dim() == 0 || b.dim() == 0) return mul(a, b);
  check(a.size(-1) == b.size(-1), "inner: the last dimension must match on both input tensors but got shapes {} and {}",
        a.sizes(), b.sizes());
  const DType dtype = result_type_of(a, b);
  return tensordot(as_dtype(a, dtype), as_dtype(b, dtype), Dims{-1}, Dims{-1});
}

Tensor dist(const Tensor& a, const Tensor& b, double p, Where where) {
  CallSiteScope site(where);
  check(is_floating(a.dtype()) && is_floating(b.dtype()),
        "dist: expected floating inputs, got {} and {} (shapes {} and {})", a.dtype(), b.dtype(), a.sizes(), b.sizes());
  return norm(sub(a, b), p);
}

}  // namespace ember
