// sin and cos of a float for the pointwise functors: branch-free on the host, so CPU loops
// vectorize as ember's other float loops do (glibc's sinf/cosf are one call per element), within
// 0.5001 ulp over every finite float, huge ones included (measured against double <cmath> on 2e7
// random bit patterns and 2e7 floats from 0.5 to 1e9). The reduction costs about 100 double
// operations an element: on the 2-core CI VM (AVX-512) the vectorized loop ran as fast as glibc's
// scalar sinf, not faster. CUDA uses its own sinf/cosf; double uses <cmath> everywhere.
//
// The argument is reduced exactly in double: x (2/pi) = j + f, j whole, |f| <= 1/2, with 2/pi
// split into nine 24-bit pieces, so each product with x (24 bits) is exact, and each product is
// taken modulo 4 exactly (only j mod 4 matters) before the pieces are summed with their rounding
// errors kept. Nine pieces reach 2^-216, past what the largest float (2^128) times 2/pi needs for
// f to carry float's precision even next to a multiple of pi/2. sin and cos of r = f pi/2 are
// their Taylor series in double (|r| <= pi/4; the first terms left out are below 1e-11).
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace ember::fn::math {

#if !defined(__CUDA_ARCH__)
namespace trig {

// r = x - j pi/2 in [-pi/4, pi/4] (as f pi/2), and `quadrant` = j mod 4 as a double (0 to 3).
EMBER_FORCE_INLINE inline double quarter_turn_rest(float x, double& quadrant) {
  // 2/pi = sum of these: 24 bits each, in hexadecimal so that every bit is exact.
  constexpr double kTwoOverPi[9] = {0x1.45f306p-1,   0x1.b93910p-26,  0x1.529fc0p-52,
                                    0x1.3abe88p-75,  0x1.ea69bap-97,  0x1.81b6c4p-121,
                                    0x1.2b3278p-145, 0x1.0e4104p-170, 0x1.fca2c6p-193};
  const double wide = x;
  double sum = 0.0;
  double error = 0.0;  // what the sum's roundings dropped (two-sum)
  for (double piece : kTwoOverPi) {
    const double product = wide * piece;
    // Exact: |product| < 2 is kept whole; a larger one's spacing divides the multiple of 4 taken
    // (so one FMA and a multiply then a subtract give the same bits; the FMA is faster).
    const double part = mul_add(-4.0, std::nearbyint(product * 0.25), product);
    const double total = sum + part;
    const double part_in_total = total - sum;
    error += (sum - (total - part_in_total)) + (part - part_in_total);
    sum = total;
  }
  const double whole = std::nearbyint(sum);
  quadrant = whole - 4.0 * std::floor(whole * 0.25);
  return ((sum - whole) + error) * 0x1.921fb54442d18p+0;  // pi/2
}

// Taylor series to r^11 and r^12, coefficients 1/k! rounded to double, in FMAs (mul_add).
EMBER_FORCE_INLINE inline double sin_near_zero(double r) {
  const double z = r * r;
  double p = -0x1.ae64567f544e4p-26;
  p = mul_add(p, z, 0x1.71de3a556c734p-19);
  p = mul_add(p, z, -0x1.a01a01a01a01ap-13);
  p = mul_add(p, z, 0x1.1111111111111p-7);
  p = mul_add(p, z, -0x1.5555555555555p-3);
  return mul_add(r * z, p, r);
}
EMBER_FORCE_INLINE inline double cos_near_zero(double r) {
  const double z = r * r;
  double p = 0x1.1eed8eff8d898p-29;
  p = mul_add(p, z, -0x1.27e4fb7789f5cp-22);
  p = mul_add(p, z, 0x1.a01a01a01a01ap-16);
  p = mul_add(p, z, -0x1.6c16c16c16c17p-10);
  p = mul_add(p, z, 0x1.5555555555555p-5);
  p = mul_add(p, z, -0.5);
  return mul_add(z, p, 1.0);
}

}  // namespace trig
#endif

// sin(j pi/2 + r) is sin r, cos r, -sin r, -cos r for j mod 4 = 0, 1, 2, 3. NaN and infinities give
// NaN through the reduction (inf - inf); -0.0 is kept by the last select.
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float sin_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::sinf(x);
#else
  double quadrant;
  const double r = trig::quarter_turn_rest(x, quadrant);
  const bool odd = quadrant == 1.0 || quadrant == 3.0;
  const double odd_quadrant = odd ? trig::cos_near_zero(r) : trig::sin_near_zero(r);
  const double value = quadrant >= 2.0 ? -odd_quadrant : odd_quadrant;
  return x == 0.0f ? x : static_cast<float>(value);
#endif
}

// cos(j pi/2 + r) is cos r, -sin r, -cos r, sin r for j mod 4 = 0, 1, 2, 3.
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float cos_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::cosf(x);
#else
  double quadrant;
  const double r = trig::quarter_turn_rest(x, quadrant);
  const bool odd = quadrant == 1.0 || quadrant == 3.0;
  const double even_quadrant = odd ? trig::sin_near_zero(r) : trig::cos_near_zero(r);
  return static_cast<float>((quadrant == 1.0 || quadrant == 2.0) ? -even_quadrant : even_quadrant);
#endif
}

}  // namespace ember::fn::math
