// log|Gamma|, digamma and polygamma in double (ember::fn::special), for the functors of
// special_functors.h; host and device code. Float callers compute here and round once, so a float
// result is within an ulp of the true value. Values at poles and infinities follow torch.
//
// Methods (textbook analysis, coefficients derived with mpmath from their definitions):
// - lgamma: on [0.5, 2.5] the Taylor series of log Gamma(2 + z) (zeta-function coefficients, so the
//   zeros at 1 and 2 keep their relative precision); below by Gamma(x + 1) = x Gamma(x), above 2.5
//   by the same recurrence down to it, above 10 Stirling's series; negative x by reflection.
// - digamma: the recurrence psi(x) = psi(x + 1) - 1 / x up to 10, then the asymptotic series
//   (Abramowitz & Stegun 6.3.18); near its positive zero a Taylor series about it; reflection below 0.
// - polygamma(n >= 1): (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta summed directly up to
//   max(10, n + 1) and finished by Euler-Maclaurin (DLMF 25.11.5); negative x by splitting the sum
//   at 0 into zetas of positive arguments, so its cost does not grow with |x|.
#pragma once

#include <cmath>
#include <limits>

#include "kernels/host_device.h"

// The entry points (lgamma, digamma, ...) are long: on the device each is compiled once per
// translation unit and called, instead of inlined into every kernel that uses it (inlined, the
// CUDA file of these ops took 3.5 minutes to compile); helpers inline into them.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EMBER_SPECIAL_FUNCTION inline __host__ __device__ __noinline__
#else
#define EMBER_SPECIAL_FUNCTION inline
#endif

namespace ember::fn::special {

inline constexpr double kPi = 3.14159265358979323846;

// c0 + z (c1 + z (c2 + ...)): a polynomial in Horner form over literal coefficients, which
// every target (host, nvcc, NVRTC) unrolls without a table in memory.
EMBER_HOST_DEVICE double horner(double, double c0) { return c0; }
template <typename... Rest>
EMBER_HOST_DEVICE double horner(double z, double c0, Rest... rest) {
  return c0 + z * horner(z, rest...);
}

EMBER_HOST_DEVICE double infinity() { return std::numeric_limits<double>::infinity(); }
EMBER_HOST_DEVICE double quiet_nan() { return std::numeric_limits<double>::quiet_NaN(); }

// sin(pi r) / pi for |r| <= 0.5 without pi r losing subnormal r's bits (lgamma(-5e-324) is finite).
EMBER_HOST_DEVICE double sinpi_over_pi(double r) {
  return std::abs(r) < 1e-8 ? r * (1.0 - kPi * kPi * r * r / 6.0) : std::sin(kPi * r) / kPi;
}

// log Gamma(2 + z) for |z| <= 0.5: (1 - gamma) z + sum_k>=2 (-1)^k (zeta(k) - 1) / k z^k. The
// coefficients fall like 2^-k, so 26 terms leave under 1e-18 at |z| = 0.5.
EMBER_HOST_DEVICE double lgamma_near_two(double z) {
  const double tail =
      horner(-z, 3.22467033424113203e-01, 6.73523010531981020e-02, 2.05808084277845464e-02, 7.38555102867398568e-03,
             2.89051033074152336e-03, 1.19275391170326102e-03, 5.09669524743042450e-04, 2.23154758453579386e-04,
             9.94575127818085310e-05, 4.49262367381331420e-05, 2.05072127756706911e-05, 9.43948827526839672e-06,
             4.37486678990748817e-06, 2.03921575380136619e-06, 9.55141213040741935e-07, 4.49246919876456619e-07,
             2.12071848055546646e-07, 1.00432248239680991e-07, 4.76981016936398040e-08, 2.27110946089431635e-08,
             1.08386592148969546e-08, 5.18347504197004664e-09, 2.48367454380247848e-09, 1.19214014058609115e-09,
             5.73136724167886225e-10, 2.75952288512423336e-10);
  return z * (4.22784335098467134e-01 + z * tail);
}

// log Gamma(x) for x > 0.
EMBER_HOST_DEVICE double lgamma_positive(double x) {
  if (x < 0.5) return lgamma_near_two(x) - std::log1p(x) - std::log(x);  // Gamma(x) = Gamma(1 + x) / x
  if (x < 1.5) return lgamma_near_two(x - 1.0) - std::log1p(x - 1.0);    // Gamma(1 + z) = Gamma(2 + z) / (1 + z)
  if (x <= 10.0) {
    double product = 1.0;  // Gamma(x) = (x - 1) ... (x - m) Gamma(x - m), all factors > 1.5
    while (x > 2.5) {
      x -= 1.0;
      product *= x;
    }
    return lgamma_near_two(x - 2.0) + std::log(product);
  }
  if (x == infinity()) return x;
  // Stirling: (x - 1/2) log x - x + log(2 pi) / 2 + sum_k B_2k / (2k (2k - 1) x^(2k - 1)); the
  // ninth term is under 2e-18 at x = 10.
  const double inverse = 1.0 / x;
  const double series = inverse * horner(inverse * inverse, 1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188,
                                         -691.0 / 360360, 1.0 / 156, -3617.0 / 122400);
  return (x - 0.5) * std::log(x) - x + 0.91893853320467274178 + series;
}

// log|Gamma(x)|: +inf at the poles (0 and the negative integers) and at -inf, as torch.lgamma.
EMBER_SPECIAL_FUNCTION double lgamma(double x) {
  if (std::isnan(x)) return x;
  if (x > 0.0) return lgamma_positive(x);
  if (x == std::floor(x)) return infinity();  // 0, -0, the negative integers and -inf
  // Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x); sin(pi x) = +-sin(pi r), r = x - round(x).
  const double r = x - std::nearbyint(x);
  return -std::log(std::abs(sinpi_over_pi(r))) - lgamma_positive(1.0 - x);
}

// psi(x) for x > 0.
EMBER_HOST_DEVICE double digamma_positive(double x) {
  // Taylor series about the zero x0 = 1.4616321449683622 + 9.55e-17 (coefficients psi^(k)(x0) / k!):
  // the recurrence below would leave an absolute, not relative, error there.
  const double near_zero = (x - 1.4616321449683622) - 9.549995429965697e-17;
  if (std::abs(near_zero) < 0.1) {
    return near_zero * horner(near_zero, 9.67672245447621204e-01, -4.42763168983592081e-01, 2.58499760955651026e-01,
                              -1.63942705442406522e-01, 1.07824050691262371e-01, -7.21995612564547140e-02,
                              4.88042881641431101e-02, -3.31611264748473619e-02, 2.25976482322181038e-02,
                              -1.54247659049489595e-02, 1.05387916166121750e-02, -7.20453438635686866e-03,
                              4.92678139572985327e-03, -3.36980165543932821e-03, 2.30512632673492797e-03);
  }
  double shift = 0.0;
  while (x < 10.0) {
    shift += 1.0 / x;
    x += 1.0;
  }
  // psi(x) ~ log x - 1 / (2x) - sum_k B_2k / (2k x^2k); the ninth term is under 1e-17 at x = 10.
  const double inverse_square = 1.0 / (x * x);
  const double series = inverse_square * horner(inverse_square, 1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132,
                                                -691.0 / 32760, 1.0 / 12, -3617.0 / 8160);
  return std::log(x) - 0.5 / x - series - shift;
}

// psi(x) = d/dx log Gamma(x). torch's values: psi(+-0) = -+inf, NaN at the negative integers and -inf.
EMBER_SPECIAL_FUNCTION double digamma(double x) {
  if (std::isnan(x)) return x;
  if (x == 0.0) return std::signbit(x) ? infinity() : -infinity();
  if (x > 0.0) return digamma_positive(x);
  if (x == std::floor(x)) return quiet_nan();
  // Reflection: psi(x) = psi(1 - x) - pi cot(pi x), cot having period 1; 1 / r where pi r is subnormal.
  const double r = x - std::nearbyint(x);
  const double pi_cot = std::abs(r) < 1e-8 ? 1.0 / r - kPi * kPi * r / 3.0 : kPi / std::tan(kPi * r);
  return digamma_positive(1.0 - x) - pi_cot;
}

// The Euler-Maclaurin remainder sum_j B_2j / (2j)! s (s+1) ... (s+2j-2) a^(-s-2j+1), `factor`
// holding s ... a^(-s-1) for the first term; the smallest terms are added first.
EMBER_HOST_DEVICE double euler_maclaurin(double, double, double factor, double, double coefficient) {
  return coefficient * factor;
}
template <typename... Rest>
EMBER_HOST_DEVICE double euler_maclaurin(double s, double inverse_square, double factor, double j, double coefficient,
                                         Rest... rest) {
  const double next = factor * (s + 2.0 * j - 1.0) * (s + 2.0 * j) * inverse_square;
  return euler_maclaurin(s, inverse_square, next, j + 1.0, rest...) + coefficient * factor;
}

// zeta(s, a) = sum_k>=0 (a + k)^-s for a whole s >= 2 and a > 0: the terms below max(10, s)
// summed, the rest by Euler-Maclaurin with 12 Bernoulli terms (each term's ratio to the last is
// about ((s + 2j) / (2 pi a))^2, so the twelfth is under 1e-17 of the sum for a >= max(10, s)).
EMBER_HOST_DEVICE double hurwitz_zeta_positive(double s, double a) {
  const double start = s > 10.0 ? s : 10.0;
  double sum = 0.0;
  while (a < start) {
    sum += std::pow(a, -s);
    a += 1.0;
  }
  const double power = std::pow(a, -s);
  const double remainder = euler_maclaurin(s, 1.0 / (a * a), s * power / a, 1.0, 8.33333333333333287e-02,
                                           -1.38888888888888894e-03, 3.30687830687830710e-05, -8.26719576719576754e-07,
                                           2.08767569878681002e-08, -5.28419013868749322e-10, 1.33825365306846789e-11,
                                           -3.38968029632258272e-13, 8.58606205627784517e-15, -2.17486869855806192e-16,
                                           5.50900282836022953e-18, -1.39544646858125223e-19);
  return sum + (remainder + 0.5 * power + a * power / (s - 1.0));
}

// zeta(s, x) for a whole s >= 2 and any x that is not a pole. For x < 0 with m = -floor(x) the
// terms (x + k)^-s, k < m, are (-1)^s (f + i)^-s with f = 1 - frac(x): a difference of two zetas.
EMBER_HOST_DEVICE double hurwitz_zeta(double s, double x) {
  if (x > 0.0) return hurwitz_zeta_positive(s, x);
  const double m = -std::floor(x);
  const double fraction = x + m;  // exact, in (0, 1)
  const double f = 1.0 - fraction;
  const double negative_terms = hurwitz_zeta_positive(s, f) - hurwitz_zeta_positive(s, f + m);
  const double odd = std::fmod(s, 2.0) != 0.0 ? -1.0 : 1.0;
  return odd * negative_terms + hurwitz_zeta_positive(s, fraction);
}

// psi^(n)(x), the n-th derivative of digamma (n >= 0; the op checks n). At the poles torch's
// +-inf: (-1)^(n+1) n! times zeta's +inf; 0 at +inf, NaN at -inf.
EMBER_SPECIAL_FUNCTION double polygamma(long long n, double x) {
  if (n == 0) return digamma(x);
  if (std::isnan(x)) return x;
  const double sign = n % 2 != 0 ? 1.0 : -1.0;
  if (x == infinity()) return sign * 0.0;
  if (x == -infinity()) return quiet_nan();
  if (x <= 0.0 && x == std::floor(x)) return sign * infinity();
  const double s = static_cast<double>(n) + 1.0;
  const double zeta = hurwitz_zeta(s, x);
  if (n > 170) return sign * std::copysign(std::exp(lgamma(s) + std::log(std::abs(zeta))), zeta);  // n! overflows
  double factorial = 1.0;
  for (long long k = 2; k <= n; ++k) factorial *= static_cast<double>(k);
  return sign * factorial * zeta;
}

}  // namespace ember::fn::special
