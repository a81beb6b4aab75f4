// The error-function family in double (ember::fn::special): erfcx, log_ndtr, erfinv and ndtri,
// for the functors of special_functors.h; host and device code. Values at the ends follow torch.
//
// - erfcx(x) = e^(x^2) erfc(x): the library's erfc times e^(x^2) formed from x^2 split into two
//   doubles (one rounding of x^2 would cost x^2 ulps); from 12 on the asymptotic series
//   1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2x^2)^k (A&S 7.1.23), whose twelfth term is 1e-17.
// - log_ndtr(x) = log Phi(x): log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1 (no underflow),
//   log1p(-erfcx(x / sqrt 2) e^(-x^2 / 2) / 2) above.
// - erfinv / ndtri: a start from Giles' single-precision approximation ("Approximating the erfinv
//   function", GPU Computing Gems Jade, 2011) or, far in the tail, from erfc's leading asymptotic
//   term, then refined against the library's erf / erfc: Halley steps on erf(x) - y in the middle,
//   Newton steps on log erfc(x) - log w in the tails, where w = 1 - |y| (or 2p) is exact and
//   log erfc = log erfcx - x^2 never underflows. ndtri(p) = sqrt(2) erfinv(2p - 1) with the tail
//   taken from 2p or 2(1 - p) directly, so tiny p keeps its precision.
#pragma once

#include "kernels/special_gamma.h"

namespace ember::fn::special {

inline constexpr double kSqrtPi = 1.77245385090551602730;
inline constexpr double kSqrtTwo = 1.41421356237309504880;

// e^(x^2) with x^2 = high + low exactly (an FMA gives the rounding error of x x).
EMBER_HOST_DEVICE double exp_square(double x) {
  const double high = x * x;
  const double low = std::isfinite(high) ? std::fma(x, x, -high) : 0.0;
  return std::exp(high) * (1.0 + low);
}

EMBER_HOST_DEVICE double erfcx_nonnegative(double x) {
  if (x < 12.0) return std::erfc(x) * exp_square(x);
  const double z = 0.5 / x / x;  // 0 for x past 1e154 and at +inf
  return horner(z, 1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0, 2027025.0, -34459425.0, 654729075.0,
                -13749310575.0) /
         (x * kSqrtPi);
}

// e^(x^2) erfc(x): 2 e^(x^2) - erfcx(-x) below 0, +inf once e^(x^2) overflows.
EMBER_SPECIAL_FUNCTION double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x >= 0.0) return erfcx_nonnegative(x);
  if (x < -26.7) return infinity();
  return 2.0 * exp_square(x) - erfcx_nonnegative(-x);
}

// log of the standard normal CDF: 0 at +inf, -inf at -inf.
EMBER_SPECIAL_FUNCTION double log_ndtr(double x) {
  if (std::isnan(x)) return x;
  const double t = x / kSqrtTwo;
  if (x < -1.0) return std::log(0.5 * erfcx(-t)) - 0.5 * x * x;
  // 1 - Phi(x) = erfcx(t) e^(-x^2 / 2) / 2: erfc(t) itself would carry t's rounding times 2 t^2.
  const double high = x * x;
  const double low = std::isfinite(high) ? std::fma(x, x, -high) : 0.0;  // x = inf: fma is NaN
  return std::log1p(-0.5 * erfcx(t) * std::exp(-0.5 * high) * (1.0 - 0.5 * low));
}

// Giles' approximation of erfinv(y) for |y| < 1, to about 1e-7 where 1 - |y| > 1e-7; w = 1 - |y|.
EMBER_HOST_DEVICE double erfinv_start(double y, double w) {
  double t = -std::log(w * (2.0 - w));  // -log(1 - y^2)
  double p;
  if (t < 5.0) {
    t -= 2.5;
    p = horner(t, 1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
               -3.5233877e-06, 3.43273939e-07, 2.81022636e-08);
  } else {
    t = std::sqrt(t) - 3.0;
    p = horner(t, 2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844, 0.00134934322,
               0.000100950558, -0.000200214257);
  }
  return p * y;
}

// erfinv(y) for |y| <= 0.5: one Halley step on f(x) = erf(x) - y from Giles' start (cubic
// convergence: 1e-7 -> 1e-21; a second step changed no tested value). f' = 2/sqrt(pi) e^-x^2 and
// f'' = -2x f', so the step is (f / f') / (1 + x f / f').
EMBER_HOST_DEVICE double erfinv_central(double y) {
  if (y == 0.0) return y;  // keeps -0
  double x = erfinv_start(y, 1.0 - std::abs(y));
  const double ratio = (std::erf(x) - y) / (2.0 / kSqrtPi * std::exp(-x * x));
  return x - ratio / (1.0 + x * ratio);
}

// The x > 0 with erfc(x) = w, for 0 < w < 0.5. Newton on g(x) = log erfcx(x) - x^2 - log w,
// g'(x) = -2 / (sqrt(pi) erfcx(x)): nearly a parabola, so three steps from a start within 2e-3
// reach double precision (1e-3 -> 1e-6 -> 1e-12 -> 1e-24; two fail the tests). Below w = 1e-7 the
// start solves w = e^(-x^2) / (x sqrt(pi)).
EMBER_HOST_DEVICE double erfc_inverse_tail(double w) {
  const double log_w = std::log(w);
  double x;
  if (w > 1e-7) {
    x = erfinv_start(1.0 - w, w);
  } else {
    x = std::sqrt(-log_w);
    for (int step = 0; step < 2; ++step) x = std::sqrt(-log_w - std::log(x * kSqrtPi));
  }
  for (int step = 0; step < 3; ++step) {
    const double scaled = erfcx_nonnegative(x);
    const double g = std::log(scaled) - x * x - log_w;
    x += g * kSqrtPi * scaled / 2.0;
  }
  return x;
}

// Inverse error function on [-1, 1]: +-inf at +-1, NaN outside.
EMBER_SPECIAL_FUNCTION double erfinv(double y) {
  const double magnitude = std::abs(y);
  if (!(magnitude <= 1.0)) return quiet_nan();  // also NaN in
  if (magnitude == 1.0) return std::copysign(infinity(), y);
  if (magnitude <= 0.5) return erfinv_central(y);
  return std::copysign(erfc_inverse_tail(1.0 - magnitude), y);  // 1 - |y| is exact here
}

// Inverse of the standard normal CDF on [0, 1]: -inf at 0, +inf at 1, NaN outside.
EMBER_SPECIAL_FUNCTION double ndtri(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return quiet_nan();
  if (p == 0.0) return -infinity();
  if (p == 1.0) return infinity();
  if (p < 0.25) return -kSqrtTwo * erfc_inverse_tail(2.0 * p);
  if (p > 0.75) return kSqrtTwo * erfc_inverse_tail(2.0 * (1.0 - p));  // 1 - p exact for p >= 0.5
  return kSqrtTwo * erfinv_central(2.0 * p - 1.0);                     // exact for p in [0.25, 0.75]
}

}  // namespace ember::fn::special
