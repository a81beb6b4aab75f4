// Long-double references for torch.special's functions, independent of kernels/special_*.h: libm's
// lgammal / erfl / erfcl where they exist, otherwise other methods or other parameters (bisection
// for the inverses, the power series at every argument for the Bessel functions, direct summation
// through the negative terms for polygamma). Also the float32 ulp distance the tests bound.
#pragma once

#include <cmath>
#include <limits>

namespace ember::testing::special_reference {

using Long = long double;
inline constexpr Long kPi = 3.141592653589793238462643383279502884L;

inline double lgamma(double x) { return static_cast<double>(std::lgamma(static_cast<Long>(x))); }

// psi by the recurrence up to 40, then five terms of the asymptotic series (error under 1e-20).
inline double digamma(double x) {
  if (x <= 0 && x == std::floor(x)) return x == 0 ? -std::copysign(INFINITY, x) : NAN;
  Long value = x, shift = 0;
  if (value < 0) return static_cast<double>(digamma(1.0 - x) - kPi / std::tan(kPi * (value - std::nearbyint(value))));
  for (; value < 40; value += 1) shift += 1 / value;
  const Long z = 1 / (value * value);
  return static_cast<double>(std::log(value) - 1 / (2 * value) -
                             z * (1.0L / 12 - z * (1.0L / 120 - z * (1.0L / 252 - z * (1.0L / 240 - z / 132)))) -
                             shift);
}

// psi^(n)(x) = (-1)^(n+1) n! sum_k (x + k)^-(n+1): the terms summed up to x + k >= 1000 + 2n
// (through the negative ones for x < 0), then the integral, the half term and three
// Euler-Maclaurin terms (the next is under 1e-20 of the sum there).
inline double polygamma(int n, double x) {
  if (n == 0) return digamma(x);
  const Long s = n + 1;
  Long a = x, sum = 0;
  // a^-s by multiplication: s is a small integer, and libm's powl made this loop the slowest
  // reference in the suite.
  const auto inverse_power = [n](Long base) {
    Long product = base;
    for (int k = 0; k < n; ++k) product *= base;
    return 1 / product;
  };
  for (; a < 1000 + 2 * s; a += 1) sum += inverse_power(a);
  const Long power = inverse_power(a);
  sum += a * power / (s - 1) + power / 2 + s * power / a / 12 - s * (s + 1) * (s + 2) * power / (a * a * a) / 720 +
         s * (s + 1) * (s + 2) * (s + 3) * (s + 4) * power / (a * a * a * a * a) / 30240;
  const Long factorial = std::tgamma(s);
  return static_cast<double>((n % 2 ? 1 : -1) * factorial * sum);
}

// The root of a decreasing or increasing `function` - target on [low, high] by bisection.
template <typename Function>
Long bisect(Function function, Long target, Long low, Long high) {
  const bool increasing = function(high) > function(low);
  for (int step = 0; step < 200; ++step) {
    const Long middle = (low + high) / 2;
    if ((function(middle) < target) == increasing)
      low = middle;
    else
      high = middle;
  }
  return (low + high) / 2;
}

// erfinv by bisection on erfl, or on erfcl (1 - |y| exact in double) past 0.5.
inline double erfinv(double y) {
  if (std::abs(y) > 1 || std::isnan(y)) return NAN;
  if (std::abs(y) == 1) return std::copysign(INFINITY, y);
  const Long magnitude = std::abs(y);
  if (magnitude < 1e-10L) return y * std::sqrt(kPi) / 2 * (1 + kPi * y * y / 12);  // the Maclaurin series
  const Long root = magnitude <= 0.5L ? bisect([](Long x) { return std::erf(x); }, magnitude, 0, 2)
                                      : bisect([](Long x) { return std::erfc(x); }, 1 - magnitude, 0, 30);
  return std::copysign(static_cast<double>(root), y);
}

// ndtri by bisection on the CDF erfcl(-x / sqrt 2) / 2 (its tail, for p > 1/2, on 1 - p).
inline double ndtri(double p) {
  if (!(p >= 0 && p <= 1)) return NAN;
  if (p == 0 || p == 1) return p == 0 ? -INFINITY : INFINITY;
  if (p == 0.5) return 0;
  const Long root_two = std::sqrt(2.0L);
  if (p <= 0.5) return static_cast<double>(bisect([&](Long x) { return std::erfc(-x / root_two) / 2; }, p, -40, 0));
  return static_cast<double>(
      bisect([&](Long x) { return std::erfc(x / root_two) / 2; }, 1 - static_cast<Long>(p), 0, 40));
}

// e^(x^2) erfc(x) in long double (whose range holds erfc(100)), asymptotic beyond 100.
inline double erfcx(double x) {
  const Long value = x;
  if (value > 100) {
    const Long z = 1 / (2 * value * value);
    return static_cast<double>((1 - z + 3 * z * z - 15 * z * z * z) / (value * std::sqrt(kPi)));
  }
  return static_cast<double>(std::exp(value * value) * std::erfc(value));
}

inline double log_ndtr(double x) {
  const Long t = static_cast<Long>(x) / std::sqrt(2.0L);
  if (x > 0) return static_cast<double>(std::log1p(-std::erfc(t) / 2));
  return static_cast<double>(std::log(std::erfc(-t) / 2));
}

// I_order(|x|) by its power series at every argument (all terms positive; long double holds
// e^700), scaled by e^-|x| when asked.
inline double bessel_i(int order, double x, bool scaled) {
  const Long a = std::abs(static_cast<Long>(x));
  const Long quarter_square = a * a / 4;
  Long term = order == 0 ? 1 : a / 2, sum = term;
  for (int k = 1; k < 2000 && term > sum * 1e-22L; ++k) {
    term *= quarter_square / (static_cast<Long>(k) * (k + order));
    sum += term;
  }
  if (scaled) sum *= std::exp(-a);
  return static_cast<double>(order == 1 && x < 0 ? -sum : sum);
}

// |got - expected| in units of float's spacing at `expected` (its ulp there); both must be finite.
inline double float_ulps(float got, double expected) {
  const float rounded = static_cast<float>(expected);
  const double spacing = std::nextafter(std::abs(rounded), INFINITY) - std::abs(rounded);
  return std::abs(static_cast<double>(got) - expected) / spacing;
}

}  // namespace ember::testing::special_reference
