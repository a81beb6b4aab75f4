// The pointwise composites of runtime/functional_math_more.h: lerp, addcmul, addcdiv, isclose,
// allclose, nan_to_num, logaddexp, logaddexp2 and hypot, each built from registry ops.
#include <cmath>
#include <limits>
#include <numbers>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_math_more.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

bool is_16bit(DType dtype) { return dtype == kBFloat16 || dtype == kFloat16; }

// The type a floating result is computed in: PyTorch's kernels take 16-bit values to float32 (their
// opmath type) and round the result once.
DType computing_dtype(DType result) { return is_16bit(result) ? kFloat32 : result; }

// PyTorch's result_type over three tensors: dtypes of tensors with dims promote among themselves,
// those of 0-d tensors among themselves, and the 0-d group counts only when its category is higher.
DType result_type_of_three(const Tensor& a, const Tensor& b, const Tensor& c) {
  std::optional<DType> with_dims;
  std::optional<DType> zero_dim;
  for (const Tensor* tensor : {&a, &b, &c}) {
    std::optional<DType>& group = tensor->dim() == 0 ? zero_dim : with_dims;
    group = group ? promote_types(*group, tensor->dtype()) : tensor->dtype();
  }
  if (!with_dims) return *zero_dim;
  if (!zero_dim) return *with_dims;
  return result_type(*with_dims, false, *zero_dim, true);
}

void check_lerp_dtype(const Tensor& start, const Tensor& other, const char* name) {
  check(other.dtype() == start.dtype(),
        "lerp: expected dtype {} for `{}` but got dtype {} (start shape {}, {} shape {})", start.dtype(), name,
        other.dtype(), start.sizes(), name, other.sizes());
}

void check_lerp_floating(const Tensor& start) {
  check(is_floating(start.dtype()), "lerp: expected floating-point tensors, got {} (start shape {})", start.dtype(),
        start.sizes());
}

// The value of addcmul / addcdiv is converted to the result's dtype; PyTorch truncates a fraction
// for an integer result without a word, so ember refuses one.
void check_value_for(const char* function, double value, DType result) {
  check(is_floating(result) || (std::isfinite(value) && value == std::trunc(value)),
        "{}: value {} is not an integer, but the result is {} (a fraction would be truncated)", function, value,
        result);
}

// Binary ops without an integer kernel in PyTorch (logaddexp, logaddexp2, hypot): the promoted
// dtype of a and b must be floating.
DType floating_result_of(const char* function, const Tensor& a, const Tensor& b) {
  const DType result = result_type(a.dtype(), a.dim() == 0, b.dtype(), b.dim() == 0);
  check(is_floating(result),
        "{}: expected a floating-point input, got {} and {} (shapes {} and {}), whose result type is {}", function,
        a.dtype(), b.dtype(), a.sizes(), b.sizes(), result);
  return result;
}

// m + log1p(exponential(-|a - b|)) with m = max(a, b), written as one branch per order of a and b so
// that a tie gives half the gradient to each (neither side of the branch feeds an infinity into a
// backward product); exponential is exp or exp2, and `scale` multiplies the log1p (1 / log 2 for
// the base-2 form).
template <typename Exponential>
Tensor log_add(const Tensor& a, const Tensor& b, Exponential exponential, double scale) {
  const Tensor a_larger = ge(a, b);
  const Tensor larger = ember::where(a_larger, a, b);
  const Tensor negative_gap = ember::where(a_larger, sub(b, a), sub(a, b));
  Tensor correction = log1p(exponential(negative_gap));
  if (scale != 1.0) correction = mul(correction, scale);
  const Tensor sum = add(larger, correction);
  // inf with inf (or -inf with -inf) is itself: their gap is NaN.
  const Tensor same_infinity = logical_and(isinf(a), eq(a, b));
  return ember::where(same_infinity, a, sum);
}

// The dtype's largest finite value (nan_to_num's default for +inf; its negation the lowest).
double largest_finite(DType dtype) {
  switch (dtype) {
    case kFloat64:
      return std::numeric_limits<double>::max();
    case kFloat32:
      return std::numeric_limits<float>::max();
    case kBFloat16:
      return 3.3895313892515355e38;  // 0x7F7F: float32's exponent range, 8 bits of mantissa
    case kFloat16:
      return 65504.0;  // 0x7BFF
    default:
      break;
  }
  internal_assert(false, "largest_finite: not a floating dtype (a bug in ember)");
  return 0.0;
}

}  // namespace

Tensor lerp(const Tensor& start, const Tensor& end, double weight, Where where) {
  CallSiteScope site(where);
  check_lerp_dtype(start, end, "end");
  check_lerp_floating(start);
  const DType dtype = start.dtype();
  const DType computing = computing_dtype(dtype);
  // PyTorch converts the weight to the computing type first and takes 1 - weight there.
  const double w = computing == kFloat32 ? static_cast<float>(weight) : weight;
  const double one_minus_w = computing == kFloat32 ? 1.0f - static_cast<float>(w) : 1.0 - w;
  const Tensor low = start.to(computing);
  const Tensor high = end.to(computing);
  const Tensor difference = sub(high, low);
  const Tensor result = std::abs(w) < 0.5 ? add(low, mul(difference, w)) : sub(high, mul(difference, one_minus_w));
  return result.to(dtype);
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight, Where where) {
  CallSiteScope site(where);
  check_lerp_dtype(start, end, "end");
  // A 0-d weight may have another dtype: recent PyTorch promotes it (to start's dtype, which has
  // dims) as a number.
  if (weight.dim() > 0) check_lerp_dtype(start, weight, "weight");
  check_lerp_floating(start);
  const DType dtype = start.dtype();
  const Tensor low = start.to(computing_dtype(dtype));
  const Tensor high = end.to(computing_dtype(dtype));
  const Tensor w = weight.to(computing_dtype(dtype));
  const Tensor difference = sub(high, low);
  // Both forms are finite wherever the inputs are, so where's zero gradient on the unpicked one
  // never meets an infinity; their gradients agree: (1 - w), w and (end - start).
  const Tensor small_weight = lt(abs(w), scalar_like(0.5, w));
  const Tensor from_start = add(low, mul(w, difference));
  const Tensor from_end = sub(high, mul(difference, rsub(w, 1.0)));
  return ember::where(small_weight, from_start, from_end).to(dtype);
}

Tensor addcmul(const Tensor& a, const Tensor& t1, const Tensor& t2, double value, Where where) {
  CallSiteScope site(where);
  const DType result = result_type_of_three(a, t1, t2);
  check(result != kBool, "addcmul: bool tensors are not supported (shapes {}, {} and {}), as in PyTorch", a.sizes(),
        t1.sizes(), t2.sizes());
  check_value_for("addcmul", value, result);
  const DType computing = computing_dtype(result);
  const Tensor product = mul(mul(t1.to(computing), value), t2.to(computing));
  return add(a.to(computing), product).to(result);
}

Tensor addcdiv(const Tensor& a, const Tensor& t1, const Tensor& t2, double value, Where where) {
  CallSiteScope site(where);
  check(!(is_integral(t1.dtype()) && is_integral(t2.dtype())),
        "addcdiv: integer division with addcdiv is not supported (tensor1 {}, tensor2 {}), as in PyTorch; for the "
        "historic integer division use add(a, mul(trunc(div(t1, t2)), value)), for true division convert t1 to a "
        "floating dtype",
        t1.dtype(), t2.dtype());
  const DType result = result_type_of_three(a, t1, t2);
  check_value_for("addcdiv", value, result);
  const DType computing = computing_dtype(result);
  const Tensor quotient = div(mul(t1.to(computing), value), t2.to(computing));
  return add(a.to(computing), quotient).to(result);
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan, Where where) {
  CallSiteScope site(where);
  check(a.dtype() == b.dtype(), "isclose: {} did not match {}: a and b must have one dtype (shapes {} and {})",
        a.dtype(), b.dtype(), a.sizes(), b.sizes());
  check(rtol >= 0.0, "isclose: rtol must be greater than or equal to zero, but got {}", rtol);
  check(atol >= 0.0, "isclose: atol must be greater than or equal to zero, but got {}", atol);
  NoGradGuard no_grad;  // a bool result: nothing to differentiate
  Tensor close = eq(a, b);
  if (equal_nan && is_floating(a.dtype())) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0.0 && atol == 0.0) return close;  // exactly ==, without inf - inf's NaN
  // PyTorch casts a bool a, and a bool or integer b, to its default dtype (float32) before
  // subtracting: an integer difference could wrap; an integer a then promotes with the float b.
  const Tensor cast_a = a.dtype() == kBool ? a.to(kFloat32) : a;
  const Tensor cast_b = is_integral(b.dtype()) ? b.to(kFloat32) : b;
  const Tensor allowed_error = add(abs(mul(cast_b, rtol)), atol);
  const Tensor actual_error = abs(sub(cast_a, cast_b));
  return logical_or(close, logical_and(isfinite(actual_error), le(actual_error, allowed_error)));
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan, Where where) {
  CallSiteScope site(where);
  return all(isclose(a, b, rtol, atol, equal_nan, where)).item<bool>();
}

Tensor nan_to_num(const Tensor& a, double nan, std::optional<double> posinf, std::optional<double> neginf,
                  Where where) {
  CallSiteScope site(where);
  if (!is_floating(a.dtype())) return clone(a);  // integers and bool hold no NaN or inf
  const double largest = largest_finite(a.dtype());
  // scalar_like rounds each replacement to a's dtype (a value past its range becomes inf, as
  // PyTorch's static_cast does).
  const Tensor positive = scalar_like(posinf.value_or(largest), a);
  const Tensor negative = scalar_like(neginf.value_or(-largest), a);
  const Tensor infinite = isinf(a);
  const Tensor positive_infinite = logical_and(infinite, gt(a, scalar_like(0.0, a)));
  const Tensor negative_infinite = logical_and(infinite, lt(a, scalar_like(0.0, a)));
  Tensor result = ember::where(isnan(a), scalar_like(nan, a), a);
  result = ember::where(positive_infinite, positive, result);
  return ember::where(negative_infinite, negative, result);
}

Tensor& nan_to_num_(Tensor& a, double nan, std::optional<double> posinf, std::optional<double> neginf, Where where) {
  CallSiteScope site(where);
  if (!is_floating(a.dtype())) return a;  // nothing to replace
  return copy_(a, nan_to_num(a, nan, posinf, neginf, where));
}

Tensor logaddexp(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  const DType result = floating_result_of("logaddexp", a, b);
  const DType computing = computing_dtype(result);
  const Tensor sum = log_add(
      a.to(computing), b.to(computing), [](const Tensor& x) { return exp(x); }, 1.0);
  return sum.to(result);
}

Tensor logaddexp2(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  const DType result = floating_result_of("logaddexp2", a, b);
  const DType computing = computing_dtype(result);
  const Tensor sum = log_add(
      a.to(computing), b.to(computing), [](const Tensor& x) { return exp2(x); }, 1.0 / std::numbers::ln2);
  return sum.to(result);
}

Tensor hypot(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  const DType result = floating_result_of("hypot", a, b);
  const DType computing = computing_dtype(result);
  const Tensor x = abs(a.to(computing));
  const Tensor y = abs(b.to(computing));
  // larger sqrt(1 + (smaller / larger)^2): the ratio is at most 1, so nothing overflows or
  // underflows where the result does not. The order is one where() per side (not maximum and
  // minimum), so at |a| = |b| each side gets its own gradient a / hypot, not both to one side.
  const Tensor x_larger = ge(x, y);
  // An infinite side makes the result inf even beside a NaN (C's hypot, and so PyTorch's). The
  // formula below then reads 1 and 0 instead, so that its zero gradient there meets no inf (0 * inf).
  const Tensor infinite = logical_or(isinf(x), isinf(y));
  const Tensor larger = ember::where(infinite, scalar_like(1.0, x), ember::where(x_larger, x, y));
  const Tensor smaller = ember::where(infinite, scalar_like(0.0, x), ember::where(x_larger, y, x));
  const Tensor zero = eq(larger, scalar_like(0.0, larger));
  const Tensor ratio = div(smaller, ember::where(zero, scalar_like(1.0, larger), larger));
  const Tensor scaled = mul(larger, sqrt(add(mul(ratio, ratio), 1.0)));
  return ember::where(infinite, scalar_like(INFINITY, scaled), scaled).to(result);
}

}  // namespace ember
