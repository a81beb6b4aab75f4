// torch.special in ember: the gamma family (lgamma, digamma, polygamma, mvlgamma), the error-function
// family (erfinv, erfcx, ndtr, ndtri, log_ndtr), the modified Bessel functions i0, i0e, i1, i1e and
// the entropy helpers xlog1py and entr, under libtorch's names: the top-level ember::lgamma,
// digamma, polygamma, erfinv, i0 and mvlgamma as torch::, and all of them in ember::special.
//
// The pointwise ones are registry ops (runtime/ops/special_ops.cpp; math in
// kernels/special_functors.h), so the compile stage fuses them and CUDA runs them; the rest are
// composites (runtime/special.cpp). Integer and bool inputs give float32, 16-bit floats compute
// in float32 and round once; float32 results are within an ulp or two of the true value, float64
// within about 1e-15 relative (absolute near the zeros of lgamma and digamma on the negative axis).
// Gradients are torch's (derivatives.yaml); each backward is written with these ops again, so
// gradients differentiate again.
#pragma once

#include <cstdint>

#include "runtime/tensor.h"

namespace ember {

// log|Gamma(x)|: +inf at 0, at the negative integers and at +-inf. Gradient digamma(x).
Tensor lgamma(const Tensor& x, Where where = Where::current());
// psi(x) = d/dx log Gamma(x): -inf at +0, +inf at -0, NaN at the negative integers (torch's
// values). Gradient polygamma(1, x).
Tensor digamma(const Tensor& x, Where where = Where::current());
// The n-th derivative of digamma, n >= 0 (polygamma(0, x) is digamma): (-1)^(n+1) n! zeta(n+1, x),
// +-inf at the poles. A negative n is an error. Gradient polygamma(n + 1, x).
Tensor polygamma(int64_t n, const Tensor& x, Where where = Where::current());
// The inverse of erf on [-1, 1]: +-inf at +-1, NaN outside. Gradient sqrt(pi) / 2 e^(erfinv(x)^2).
Tensor erfinv(const Tensor& x, Where where = Where::current());
// The modified Bessel function of the first kind of order 0. Gradient i1(x).
Tensor i0(const Tensor& x, Where where = Where::current());
// The multivariate log-gamma of dimension p: sum_j<p lgamma(x - j/2) + p (p-1)/4 log(pi). p >= 1,
// and every element must exceed (p - 1) / 2 (torch's errors; the check reads the values, so inside
// a compiled function it is a graph break).
Tensor mvlgamma(const Tensor& x, int64_t p, Where where = Where::current());

namespace special {

Tensor gammaln(const Tensor& x, Where where = Where::current());  // lgamma
Tensor digamma(const Tensor& x, Where where = Where::current());
Tensor psi(const Tensor& x, Where where = Where::current());  // digamma
Tensor polygamma(int64_t n, const Tensor& x, Where where = Where::current());
Tensor multigammaln(const Tensor& x, int64_t p, Where where = Where::current());  // mvlgamma
Tensor erfinv(const Tensor& x, Where where = Where::current());
// e^(x^2) erfc(x), without erfc's underflow: ~1 / (x sqrt(pi)) for large x, +inf below -26.7.
// Gradient 2 x erfcx(x) - 2 / sqrt(pi).
Tensor erfcx(const Tensor& x, Where where = Where::current());
// The standard normal CDF, erfc(-x / sqrt 2) / 2 (a composite of erfc).
Tensor ndtr(const Tensor& x, Where where = Where::current());
// The inverse of ndtr on [0, 1]: -inf at 0, +inf at 1, NaN outside; accurate down to the smallest
// p. Gradient sqrt(2 pi) e^(ndtri(p)^2 / 2).
Tensor ndtri(const Tensor& p, Where where = Where::current());
// log ndtr(x) without underflow (about -x^2 / 2 for very negative x). Gradient
// e^(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi), finite everywhere.
Tensor log_ndtr(const Tensor& x, Where where = Where::current());
// i0 and i1 (the order-1 Bessel function, odd), and both scaled by e^-|x| (no overflow).
// Gradients: i0' = i1, i0e' = i1e - sign(x) i0e, i1' = i0 - i1 / x, i1e' = i0e - i1e (sign(x) +
// 1 / x), the last two 1/2 at 0.
Tensor i0(const Tensor& x, Where where = Where::current());
Tensor i0e(const Tensor& x, Where where = Where::current());
Tensor i1(const Tensor& x, Where where = Where::current());
Tensor i1e(const Tensor& x, Where where = Where::current());
// x log1p(y): 0 where x == 0 unless y is NaN (even for y <= -1 or y = inf), NaN where y is. x and
// y broadcast to their result type (float32 for integers). Gradients log1p(y) to x (0 where x == 0
// and y <= -1) and x / (1 + y) to y, as torch's.
Tensor xlog1py(const Tensor& x, const Tensor& y, Where where = Where::current());
Tensor xlog1py(const Tensor& x, double y, Where where = Where::current());
Tensor xlog1py(double x, const Tensor& y, Where where = Where::current());
// The elementwise entropy term: -x log x for x > 0, 0 at 0, -inf below 0, NaN for NaN. Gradient
// -(1 + log x) for x > 0, 0 at and below 0 (torch gives inf at 0 and NaN below).
Tensor entr(const Tensor& x, Where where = Where::current());

}  // namespace special

}  // namespace ember
