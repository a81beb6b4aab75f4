// runtime/special.h: the op functions of torch.special's registry ops (runtime/ops/special_ops.cpp)
// and the composites mvlgamma, ndtr, xlog1py and entr, built from registry ops so that autograd,
// CUDA and compile capture come from the ops they call.
#include "runtime/special.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

// The floating dtype a result takes: integers and bool become float32 (torch's default dtype).
DType floating_of(DType dtype) { return is_floating(dtype) ? dtype : kFloat32; }
Tensor as_floating(const Tensor& x) { return is_floating(x.dtype()) ? x : to_dtype(x, kFloat32); }
Tensor in_dtype(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : to_dtype(x, dtype); }

Tensor xlog1py_of(const Tensor& x, const Tensor& y) {
  // Where x == 0 and log1p(y) is -inf, NaN or +inf (y <= -1, y = inf) the factor is 0, so the
  // product is torch's 0 and no 0 * inf reaches the value or the gradient; elsewhere at x == 0 the
  // factor stays log1p(y), x's gradient there as torch's.
  const Tensor x_zero = eq(x, scalar_like(0.0, x));
  const Tensor log_unbounded = logical_or(le(y, scalar_like(-1.0, y)), isinf(y));
  const Tensor masked = logical_and(x_zero, log_unbounded);
  const Tensor safe_y = ember::where(masked, scalar_like(0.0, y), y);
  return mul(x, log1p(safe_y));
}

}  // namespace

Tensor lgamma(const Tensor& x, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("lgamma");
  return dispatch_one(op, {x});
}
Tensor digamma(const Tensor& x, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("digamma");
  return dispatch_one(op, {x});
}
Tensor polygamma(int64_t n, const Tensor& x, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("polygamma");
  return dispatch_one(op, {x}, {{"n", n}});
}
Tensor erfinv(const Tensor& x, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("erfinv");
  return dispatch_one(op, {x});
}
Tensor i0(const Tensor& x, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("i0");
  return dispatch_one(op, {x});
}

Tensor mvlgamma(const Tensor& x, int64_t p, Where where) {
  CallSiteScope site(where);
  check(p >= 1, "mvlgamma: p has to be greater than or equal to 1, got p = {} (input {})", p, x.sizes());
  const Tensor values = as_floating(x);
  const double bound = 0.5 * static_cast<double>(p - 1);
  // torch's check, a read of the values (all() then item()).
  if (all(gt(values, scalar_like(bound, values))).item() == 0.0) {
    fail("mvlgamma: all elements must be greater than (p-1)/2 = {} for p = {}, but the smallest is {} (input {})",
         bound, p, amin(values).item(), x.sizes());
  }
  Tensor total = lgamma(values);
  for (int64_t j = 1; j < p; ++j) total = add(total, lgamma(sub(values, 0.5 * static_cast<double>(j))));
  const double constant = static_cast<double>(p) * static_cast<double>(p - 1) / 4 * std::log(std::numbers::pi);
  return add(total, constant);
}

namespace special {

Tensor gammaln(const Tensor& x, Where where) { return ember::lgamma(x, where); }
Tensor digamma(const Tensor& x, Where where) { return ember::digamma(x, where); }
Tensor psi(const Tensor& x, Where where) { return ember::digamma(x, where); }
Tensor polygamma(int64_t n, const Tensor& x, Where where) { return ember::polygamma(n, x, where); }
Tensor multigammaln(const Tensor& x, int64_t p, Where where) { return ember::mvlgamma(x, p, where); }
Tensor erfinv(const Tensor& x, Where where) { return ember::erfinv(x, where); }
Tensor i0(const Tensor& x, Where where) { return ember::i0(x, where); }

#define EMBER_SPECIAL_OP(function)                 \
  Tensor function(const Tensor& x, Where where) {  \
    CallSiteScope site(where);                     \
    static const OpDef& op = lookup_op(#function); \
    return dispatch_one(op, {x});                  \
  }
EMBER_SPECIAL_OP(erfcx)
EMBER_SPECIAL_OP(ndtri)
EMBER_SPECIAL_OP(log_ndtr)
EMBER_SPECIAL_OP(i0e)
EMBER_SPECIAL_OP(i1)
EMBER_SPECIAL_OP(i1e)
#undef EMBER_SPECIAL_OP

Tensor ndtr(const Tensor& x, Where where) {
  CallSiteScope site(where);
  const Tensor values = as_floating(x);
  return mul(erfc(mul(values, -1 / std::numbers::sqrt2)), 0.5);
}

Tensor xlog1py(const Tensor& x, const Tensor& y, Where where) {
  CallSiteScope site(where);
  check(x.device() == y.device(), "xlog1py: expected both inputs on one device, got {} and {}", x.device(), y.device());
  const DType result = floating_of(result_type(x.dtype(), x.dim() == 0, y.dtype(), y.dim() == 0));
  return xlog1py_of(in_dtype(x, result), in_dtype(y, result));
}
Tensor xlog1py(const Tensor& x, double y, Where where) {
  CallSiteScope site(where);
  const DType result = floating_of(x.dtype());
  return xlog1py_of(in_dtype(x, result), scalar_tensor(y, {.dtype = result, .device = x.device()}));
}
Tensor xlog1py(double x, const Tensor& y, Where where) {
  CallSiteScope site(where);
  const DType result = floating_of(y.dtype());
  return xlog1py_of(scalar_tensor(x, {.dtype = result, .device = y.device()}), in_dtype(y, result));
}

Tensor entr(const Tensor& x, Where where) {
  CallSiteScope site(where);
  const Tensor values = as_floating(x);
  // log reads 1 where x <= 0, so neither log(0) nor log(-1) reaches where's unused branch or its
  // gradient; NaN fails every comparison and passes through -x log x.
  const Tensor positive = gt(values, scalar_like(0.0, values));
  const Tensor not_positive = le(values, scalar_like(0.0, values));
  const Tensor safe = ember::where(not_positive, scalar_like(1.0, values), values);
  const Tensor entropy = neg(mul(safe, log(safe)));
  const Tensor at_or_below_zero = ember::where(eq(values, scalar_like(0.0, values)), scalar_like(0.0, values),
                                               scalar_like(-std::numeric_limits<double>::infinity(), values));
  return ember::where(positive, entropy, ember::where(not_positive, at_or_below_zero, entropy));
}

}  // namespace special

}  // namespace ember
