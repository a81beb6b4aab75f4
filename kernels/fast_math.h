// exp, expm1, log, log1p, tanh, erf, sin, cos and the normal CDF for the pointwise functors (the
// float sin and cos live in fast_trig.h). float on the host uses the branch-free versions below
// so that CPU loops vectorize (glibc's expf/logf/tanhf/erff are one call per element, 5-25x
// slower); CUDA uses its own intrinsics; double always uses <cmath>.
//
// Accuracy of the float versions, measured against mpmath: exp <= 1 ulp, log <= 1 ulp, log1p and
// tanh <= 2 ulp, normal CDF relative error < 1e-6 for |x| < 6 (PyTorch's 1 + erf(x) loses ~1e-3
// there to cancellation); against double <cmath>: expm1 <= 2.5 ulp, erf <= 2 ulp with FMAs
// (EMBER_NATIVE) and 2.2 without.
// Every multiply-add of a polynomial or an argument reduction is an explicit mul_add
// (host_device.h): one FMA instruction where the target has one, as the accuracy above was
// measured and as the loops' speed needs; libember and generated code are built without
// contraction, so nothing else fuses and eager and fused code round alike.
// The polynomial coefficients were fitted for ember by weighted least squares on Chebyshev nodes
// (relative error of the function, evaluated in float) and are not taken from another library;
// expm1's and erf's small-argument branches are their Taylor series.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/fast_trig.h"
#include "kernels/half_types.h"
#include "kernels/host_device.h"

namespace ember::fn::math {

inline constexpr double kSqrtHalf = 0.70710678118654752440;      // 1 / sqrt(2)
inline constexpr double kInvSqrtTwoPi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

// e^x in float. x = n ln2 + r with |r| <= ln2/2 (ln2 split high/low so n * high is exact), then
// e^r = 1 + r + r^2 Q(r) with Q of degree 4, and 2^n applied as two factors so that subnormal
// results and the overflow to inf both come out right. NaN passes through every select.
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float exp_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#else
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f;  // 9 significant bits: n * kLn2High is exact
  constexpr float kLn2Low = -2.12194440e-4f;
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: (t + magic) - magic rounds t
  x = x < -104.0f ? -104.0f : x;  // e^-104 rounds to 0 and e^89 to inf in float
  x = x > 89.0f ? 89.0f : x;
  const float rounded = mul_add(x, kLog2e, kRoundMagic) - kRoundMagic;
  const float n = rounded == rounded ? rounded : 0.0f;  // keeps the int conversion defined for NaN
  const float r = mul_add(-n, kLn2Low, mul_add(-n, kLn2High, x));  // n * kLn2High is exact
  float q = 0.00137514074f;
  q = mul_add(q, r, 0.00836891588f);
  q = mul_add(q, r, 0.0416695327f);
  q = mul_add(q, r, 0.166665182f);
  q = mul_add(q, r, 0.499999881f);
  const float p = mul_add(r * r, q, 1.0f + r);
  const int32_t exponent = static_cast<int32_t>(n);  // in [-150, 128]
  const int32_t half = exponent / 2;                  // both halves in [-75, 64]
  const float scale_low = detail::bits_float(static_cast<uint32_t>(half + 127) << 23);
  const float scale_high = detail::bits_float(static_cast<uint32_t>(exponent - half + 127) << 23);
  return p * scale_low * scale_high;
#endif
}

// log(x) in float: x = 2^e m with m in [sqrt(1/2), sqrt(2)), so f = m - 1 is exact and small;
// log(1 + f) = f - f^2/2 + f^3 P(f) with P of degree 7, plus e ln2 split high/low. Subnormal inputs
// are scaled by 2^23 first; 0, negatives, inf and NaN are selected at the end.
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float log_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::logf(x);
#else
  constexpr float kSmallestNormal = 1.17549435e-38f;
  const bool subnormal = x < kSmallestNormal;
  const uint32_t bits = detail::float_bits(subnormal ? x * 8388608.0f : x);  // 2^23
  const int32_t biased = static_cast<int32_t>((bits >> 23) & 0xffu) - (subnormal ? 150 : 127);
  const float mantissa = detail::bits_float((bits & 0x007fffffu) | 0x3f800000u);  // in [1, 2)
  const bool halve = mantissa > 1.41421356f;
  const float f = (halve ? 0.5f * mantissa : mantissa) - 1.0f;
  const float e = static_cast<float>(biased + (halve ? 1 : 0));
  float p = -0.0736286789f;
  p = mul_add(p, f, 0.126203269f);
  p = mul_add(p, f, -0.13202104f);
  p = mul_add(p, f, 0.142271146f);
  p = mul_add(p, f, -0.166213706f);
  p = mul_add(p, f, 0.19999826f);
  p = mul_add(p, f, -0.250008523f);
  p = mul_add(p, f, 0.333333552f);
  const float log_mantissa = mul_add(f * f * f, p, -0.5f * f * f) + f;
  const float result = mul_add(e, 0.693359375f, mul_add(e, -2.12194440e-4f, log_mantissa));  // e * high is exact
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  const float special = x == 0.0f ? -kInfinity : std::numeric_limits<float>::quiet_NaN();  // x < 0, NaN
  return x == kInfinity ? kInfinity : (x > 0.0f ? result : special);
#endif
}

// log(1 + x) in float: u = 1 + x rounds, and log(u) - ((u - 1) - x) / u removes that rounding to
// first order (for |x| < 2^-25, u == 1 and the result is x itself, but for -0.0, where the
// correction's 0 - (-0) is +0: a zero is returned as itself, as C's log1p and CUDA's keep its sign).
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float log1p_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::log1pf(x);
#else
  const float u = 1.0f + x;
  const float log_u = log_float(u);  // once: GCC did not merge two calls, and each is a polynomial
  const float corrected = x == 0.0f ? x : log_u - ((u - 1.0f) - x) / u;
  // u == 0 (x == -1) gives -inf and u == inf gives inf: the correction would turn both into NaN.
  return (u == 0.0f || u == std::numeric_limits<float>::infinity()) ? log_u : corrected;
#endif
}

// e^x - 1 in float. Below |x| = ln2 the Taylor series to x^9 / 9! (its remainder is under 0.1 ulp
// there), written x (1 + x P(x)) so that -0.0 keeps its sign; above, e^x - 1 cancels at most one
// bit (e^x >= 1/2 and e^x - 1 >= e^x / 2 on the positive side), so exp_float's error at most
// doubles. e^x saturates at 0 and inf, so -inf gives -1 and inf gives inf; NaN passes through.
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float expm1_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::expm1f(x);
#else
  float p = 2.75573188e-6f;
  p = mul_add(p, x, 2.48015876e-5f);
  p = mul_add(p, x, 1.98412701e-4f);
  p = mul_add(p, x, 1.38888892e-3f);
  p = mul_add(p, x, 8.33333377e-3f);
  p = mul_add(p, x, 4.16666679e-2f);
  p = mul_add(p, x, 1.66666672e-1f);
  p = mul_add(p, x, 0.5f);
  const float small = x * mul_add(x, p, 1.0f);
  // Below -18, e^x < 2^-25 and e^x - 1 rounds to -1: the exponential never needs a subnormal
  // result here. The clamp also keeps the vectorized loop fast: GCC may evaluate the exp arm
  // under an AVX-512 mask whose inactive lanes (those taking the polynomial) hold exp_float's own
  // clamp, -104, and the subnormal e^-104 costs a microcode assist per vector (built without
  // contraction and without mul_add, expm1 and elu ran ~5x slower on inputs near 0).
  const float large = exp_float(x < -18.0f ? -18.0f : x) - 1.0f;
  return std::abs(x) < 0.693147182f ? small : large;
#endif
}

// tanh in float: an odd polynomial x + x^3 P(x^2) below |x| = 0.625 (no cancellation near 0),
// 1 - 2 / (e^{2|x|} + 1) above it (saturates to 1 when the exponential overflows).
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float tanh_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::tanhf(x);
#else
  const float magnitude = std::abs(x);
  const float z = x * x;
  float odd = -0.00571897905f;
  odd = mul_add(odd, z, 0.0206531417f);
  odd = mul_add(odd, z, -0.0537446626f);
  odd = mul_add(odd, z, 0.133315131f);
  odd = mul_add(odd, z, -0.333332866f);
  const float small = mul_add(magnitude * z, odd, magnitude);
  const float large = 1.0f - 2.0f / (exp_float(2.0f * magnitude) + 1.0f);
  return std::copysign(magnitude < 0.625f ? small : large, x);  // tanh(-0) is -0
#endif
}

// Phi(x), the standard normal CDF, and its density phi(x). In float: Phi(-|x|) = erfc(z) / 2 with
// z = |x| / sqrt 2 and erfc(z) = e^{-z^2} E(z), where E(z) = e^{z^2} erfc(z) is smooth and is
// fitted as a degree-9 polynomial in t = 1 / (1 + z/2) on z in [0, 10] (beyond 10, e^{-z^2}
// underflows). e^{-z^2} is computed as e^{-x^2/2} (one rounding fewer) and shared with phi.
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float normal_cdf_float(float x, float& density) {
#if defined(__CUDA_ARCH__)
  const float gauss = ::expf(-0.5f * x * x);
  const float tail = 0.5f * ::erfcf(std::abs(x) * static_cast<float>(kSqrtHalf));
#else
  const float z_raw = std::abs(x) * static_cast<float>(kSqrtHalf);
  const float z = z_raw < 10.0f ? z_raw : 10.0f;
  const float t = 1.0f / mul_add(0.5f, z, 1.0f);
  float fitted = -0.0559511334f;
  fitted = mul_add(fitted, t, 0.268459409f);
  fitted = mul_add(fitted, t, -0.451375693f);
  fitted = mul_add(fitted, t, 0.233258054f);
  fitted = mul_add(fitted, t, 0.00801104493f);
  fitted = mul_add(fitted, t, 0.185588568f);
  fitted = mul_add(fitted, t, 0.248475403f);
  fitted = mul_add(fitted, t, 0.281342953f);
  fitted = mul_add(fitted, t, 0.282196283f);
  fitted = mul_add(fitted, t, -4.92599384e-06f);
  const float gauss = exp_float(-0.5f * x * x);
  const float tail = 0.5f * gauss * fitted;  // Phi(-|x|)
#endif
  density = gauss * static_cast<float>(kInvSqrtTwoPi);
  return x >= 0.0f ? 1.0f - tail : tail;
}

// erf(x) in float. Below |x| = 1 the Taylor series 2/sqrt(pi) (x - x^3/3 + x^5/10 - ...) to x^21
// (its remainder is under 2e-9 there), which keeps tiny arguments' relative precision; above,
// 1 - erfc(|x|) with erfc(|x|) = 2 Phi(-sqrt 2 |x|) from normal_cdf_float (erfc <= 0.16 there, so
// its relative error shrinks in the result). The sign is restored last (erf(-0) is -0).
EMBER_FORCE_INLINE EMBER_HOST_DEVICE float erf_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::erff(x);
#else
  const float magnitude = std::abs(x);
  const float z = x * x;
  // 2/sqrt(pi) is folded into the coefficients, its float rounding error added back separately.
  float series = 1.48071928e-08f;
  series = mul_add(series, z, -1.63658441e-07f);
  series = mul_add(series, z, 1.64621144e-06f);
  series = mul_add(series, z, -1.49256502e-05f);
  series = mul_add(series, z, 0.000120553326f);
  series = mul_add(series, z, -0.000854832702f);
  series = mul_add(series, z, 0.00522397785f);
  series = mul_add(series, z, -0.0268661715f);
  series = mul_add(series, z, 0.112837918f);
  series = mul_add(series, z, -0.376126379f);
  series = mul_add(series, z, -5.86353834e-08f);
  float density;
  const float tail = normal_cdf_float(-magnitude * 1.41421356f, density);  // erfc(|x|) / 2
  const float small = mul_add(magnitude, 1.12837923f, magnitude * series);
  const float large = 1.0f - 2.0f * tail;
  return std::copysign(magnitude < 1.0f ? small : large, x);
#endif
}

// ---- generic entry points used by the functors ----
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return exp_float(x);
  } else {
    return std::exp(x);
  }
}

template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T log(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return log_float(x);
  } else {
    return std::log(x);
  }
}

template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T log1p(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return log1p_float(x);
  } else {
    return std::log1p(x);
  }
}

template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T expm1(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return expm1_float(x);
  } else {
    return std::expm1(x);
  }
}

template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T erf(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return erf_float(x);
  } else {
    return std::erf(x);
  }
}

template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T sin(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return sin_float(x);
  } else {
    return std::sin(x);
  }
}

template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T cos(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return cos_float(x);
  } else {
    return std::cos(x);
  }
}

template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T tanh(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return tanh_float(x);
  } else {
    return std::tanh(x);
  }
}

// Phi(x); `density` receives phi(x). double uses erfc, accurate in both tails.
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T normal_cdf(T x, T& density) {
  if constexpr (std::is_same_v<T, float>) {
    return normal_cdf_float(x, density);
  } else {
    density = std::exp(T(-0.5) * x * x) * T(kInvSqrtTwoPi);
    return T(0.5) * std::erfc(-x * T(kSqrtHalf));
  }
}

}  // namespace ember::fn::math
