// The functors of the less common elementwise math (kernels/functors.h says how every functor is
// written and called): the inverse and hyperbolic trigonometric functions, logarithms and powers
// to bases 2 and 10, erfc, and the two-operand atan2, fmod and remainder.
//
// These call the C library's functions (libm on the host, CUDA's math library on the device,
// nvrtc_std.h's wrappers under NVRTC) instead of fast_math.h's vectorizable forms: they are
// rarely in a model's hot loop, and each keeps the library's full float accuracy, including the
// edges a hand-written polynomial gets wrong (tan near pi/2, acos near 1, erfc's far tail).
#pragma once

#include "kernels/functor_math.h"

namespace ember::fn {

// ---- unary, floating only (the op files turn integers into float32 first) ----
#define EMBER_LIBRARY_UNARY(Name, name)                                                             \
  struct Name {                                                                                    \
    template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {           \
      return std::name(a);                                                                         \
    }                                                                                              \
  };
EMBER_LIBRARY_UNARY(Tan, tan)
EMBER_LIBRARY_UNARY(Asin, asin)
EMBER_LIBRARY_UNARY(Acos, acos)
EMBER_LIBRARY_UNARY(Atan, atan)
EMBER_LIBRARY_UNARY(Sinh, sinh)
EMBER_LIBRARY_UNARY(Cosh, cosh)
EMBER_LIBRARY_UNARY(Asinh, asinh)
EMBER_LIBRARY_UNARY(Acosh, acosh)
EMBER_LIBRARY_UNARY(Atanh, atanh)
EMBER_LIBRARY_UNARY(Log2, log2)
EMBER_LIBRARY_UNARY(Log10, log10)
EMBER_LIBRARY_UNARY(Exp2, exp2)
EMBER_LIBRARY_UNARY(Erfc, erfc)  // 1 - erf(x) without the cancellation for large x
#undef EMBER_LIBRARY_UNARY

// ---- binary ----
// The angle of the point (b, a), in (-pi, pi]; floating only.
struct Atan2 {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    return std::atan2(a, b);
  }
};

namespace detail {
// a % b for integers with C's truncation. b == 0 gives 0 instead of undefined behaviour: the op
// kernels refuse a zero divisor first (CUDA's not inside a capture, where it cannot read it);
// b == -1 guards the overflow of lowest % -1, whose true value 0 it returns.
template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T truncated_remainder(T a, T b) {
  return (b == T(0) || b == T(-1)) ? T(0) : static_cast<T>(a % b);
}
}  // namespace detail

// C's fmod: a - trunc(a / b) * b, the sign of the dividend (torch.fmod); not for bool.
struct Fmod {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else {
      return detail::truncated_remainder(a, b);
    }
  }
};
// Python's modulo: a - floor(a / b) * b, the sign of the divisor (torch.remainder). Computed as
// PyTorch does, from fmod plus one b where the signs differ, which is exact where the
// floor-division form rounds; not for bool.
struct Remainder {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    T mod;
    if constexpr (std::is_floating_point_v<T>) {
      mod = std::fmod(a, b);
    } else {
      mod = detail::truncated_remainder(a, b);
    }
    return (mod != T(0) && ((b < T(0)) != (mod < T(0)))) ? static_cast<T>(mod + b) : mod;
  }
};

}  // namespace ember::fn
