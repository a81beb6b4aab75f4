// The element-level helpers the pointwise functors share (ember::fn::detail): integer arithmetic
// that wraps like PyTorch's, conversions that saturate instead of being undefined, integer powers,
// a sigmoid that cannot overflow, and the GELU constants. Host and device code.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/fast_math.h"
#include "kernels/host_device.h"

namespace ember::fn {

namespace detail {

template <typename T> inline constexpr bool is_bool = std::is_same_v<T, bool>;

template <typename T> EMBER_HOST_DEVICE bool is_nan(T a) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(a);
  } else {
    return false;
  }
}

// Integer +, - and * wrap around (two's complement) like PyTorch's instead of being undefined:
// integers compute in their unsigned type. Only for integers other than bool.
template <typename T> inline constexpr bool wraps = std::is_integral_v<T> && !is_bool<T>;
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T wrapping_add(T a, T b) {
  using Unsigned = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<Unsigned>(a) + static_cast<Unsigned>(b));
}
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T wrapping_sub(T a, T b) {
  using Unsigned = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<Unsigned>(a) - static_cast<Unsigned>(b));
}
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T wrapping_mul(T a, T b) {
  using Unsigned = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<Unsigned>(a) * static_cast<Unsigned>(b));
}

// Integer negation that wraps like PyTorch (-INT_MIN == INT_MIN) instead of being undefined.
template <typename T> EMBER_HOST_DEVICE T negate(T a) {
  if constexpr (std::is_integral_v<T> && !is_bool<T>) {
    return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));
  } else {
    return -a;
  }
}

// A double in T, saturating at T's range and taking NaN to 0: clamp(int32, min=-1e12) is legal,
// and no conversion is left undefined (C++ leaves a NaN or out-of-range float -> int undefined).
template <typename T> EMBER_HOST_DEVICE T saturate(double value) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    constexpr double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr double highest = static_cast<double>(std::numeric_limits<T>::max());
    if (value != value) return T(0);
    if (value <= lowest) return std::numeric_limits<T>::lowest();
    if (value >= highest) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  }
}

// `value` converted to T as every kernel stores it, on both devices: a floating value into an
// integer type truncates toward zero, saturates at the type's range and takes NaN to 0 (what
// CUDA's conversion instructions do); into bool it is value != 0; anything else is static_cast.
template <typename T, typename From> EMBER_HOST_DEVICE T convert(From value) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<T> && !is_bool<T>) {
    return saturate<T>(static_cast<double>(value));
  } else {
    return static_cast<T>(value);
  }
}

// Integer power by squaring in unsigned arithmetic (wraps on overflow like PyTorch). Negative
// exponents follow PyTorch: 1 and -1 keep their magnitude, every other base gives 0.
template <typename T> EMBER_HOST_DEVICE T integer_pow(T base, T exponent) {
  using Unsigned = std::make_unsigned_t<T>;
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? T(-1) : T(1);
    return 0;
  }
  Unsigned result = 1;
  Unsigned factor = static_cast<Unsigned>(base);
  for (T remaining = exponent; remaining != 0; remaining >>= 1) {
    if (remaining & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<T>(result);
}

// Element i of an integer arange, as PyTorch computes it: in int64 from the bounds truncated toward
// zero (the op's shape rule checked that they and every element fit), so values past 2^53 stay
// exact where a double `start + i * step` would repeat some and skip others.
template <typename T> EMBER_HOST_DEVICE T arange_integer(double start, double step, int64_t i) {
  const int64_t first = static_cast<int64_t>(start);
  const int64_t stride = static_cast<int64_t>(step);
  return static_cast<T>(wrapping_add(first, wrapping_mul(i, stride)));
}

// 1 / (1 + e^-x) evaluated through e^-|x| <= 1, so no exp overflows for large |x| and the
// negative side keeps its relative precision (e / (1 + e) instead of 1 - 1 / (1 + e)).
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T sigmoid(T x) {
  const T e = math::exp(-std::abs(x));
  const T r = T(1) / (T(1) + e);
  return x >= T(0) ? r : e * r;
}

// Constants of the GELU tanh approximation (PyTorch's formula): sqrt(2/pi) and 0.044715.
inline constexpr double kSqrtTwoOverPi = 0.79788456080286535588;
inline constexpr double kGeluKappa = 0.044715;

}  // namespace detail

}  // namespace ember::fn
