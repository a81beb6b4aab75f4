// The modified Bessel functions of the first kind of orders 0 and 1, plain (i0, i1) and scaled by
// e^-|x| (i0e, i1e), in double (ember::fn::special), for special_functors.h; host and device code.
//
// Up to |x| = 25 the power series I_n(x) = sum_k (x/2)^(2k+n) / (k! (k+n)!) (A&S 9.6.10): all its
// terms are positive, so it is accurate to a few ulps; beyond, Hankel's asymptotic expansion
// I_n(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k a_k(n) / x^k (A&S 9.7.1), whose smallest term there is
// under 1e-20. I0 is even and I1 odd; the unscaled forms multiply e^|x| in two halves, so they
// overflow only where the function itself does (past 713.98, not at e^x's 709.78).
#pragma once

#include "kernels/special_gamma.h"

namespace ember::fn::special {

// e^-a I_order(a) for a >= 0 (not NaN), order 0 or 1.
EMBER_HOST_DEVICE double bessel_i_scaled(int order, double a) {
  if (a <= 25.0) {
    const double quarter_square = 0.25 * a * a;
    double term = order == 0 ? 1.0 : 0.5 * a;
    double sum = term;
    for (int k = 1; k < 100 && term > 1e-18 * sum; ++k) {
      term *= quarter_square / (k * (k + order));
      sum += term;
    }
    return sum * std::exp(-a);
  }
  if (a == infinity()) return 0.0;
  // a_k / x^k = a_(k-1) / x^(k-1) * -(4 n^2 - (2k - 1)^2) / (8 k x).
  const double mu = 4.0 * order * order;
  double term = 1.0;
  double sum = 1.0;
  for (int k = 1; k < 60 && std::abs(term) > 1e-18 * sum; ++k) {
    const double odd = 2.0 * k - 1.0;
    term *= -(mu - odd * odd) / (8.0 * k * a);
    sum += term;
  }
  return sum / std::sqrt(2.0 * kPi * a);
}

// e^|a| times a value scaled by e^-|a|, in two halves so that e^|a| alone cannot overflow.
EMBER_HOST_DEVICE double unscaled(double scaled, double a) {
  const double half = std::exp(0.5 * a);
  return scaled * half * half;
}

EMBER_SPECIAL_FUNCTION double i0e(double x) {
  if (std::isnan(x)) return x;
  return bessel_i_scaled(0, std::abs(x));
}
EMBER_SPECIAL_FUNCTION double i1e(double x) {
  if (std::isnan(x)) return x;
  return std::copysign(bessel_i_scaled(1, std::abs(x)), x);
}
// +inf at +-inf (i1: the sign of x).
EMBER_SPECIAL_FUNCTION double i0(double x) {
  if (std::isnan(x)) return x;
  const double a = std::abs(x);
  return a == infinity() ? a : unscaled(bessel_i_scaled(0, a), a);
}
EMBER_SPECIAL_FUNCTION double i1(double x) {
  if (std::isnan(x)) return x;
  const double a = std::abs(x);
  return std::copysign(a == infinity() ? a : unscaled(bessel_i_scaled(1, a), a), x);
}

}  // namespace ember::fn::special
