// The pointwise functors of two operands, of comparisons and selection, and of one tensor with a
// host scalar (kernels/functors.h says how every functor is written and called).
#pragma once

#include "kernels/functor_math.h"

namespace ember::fn {

// ---- binary ----
struct Add {
  double alpha = 1.0;  // a + alpha * b
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (sizeof(T) == 1) {  // bool: addition is logical or, like PyTorch
      return static_cast<T>(a || (b && alpha != 0.0));
    } else if constexpr (detail::wraps<T>) {  // alpha is an integer of T's range (the op checks)
      return detail::wrapping_add(a, alpha == 1.0 ? b : detail::wrapping_mul(static_cast<T>(alpha), b));
    } else {
      return alpha == 1.0 ? static_cast<T>(a + b) : static_cast<T>(a + static_cast<T>(alpha) * b);
    }
  }
};
struct Sub {
  double alpha = 1.0;  // a - alpha * b
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (detail::wraps<T>) {
      return detail::wrapping_sub(a, alpha == 1.0 ? b : detail::wrapping_mul(static_cast<T>(alpha), b));
    } else {
      return alpha == 1.0 ? static_cast<T>(a - b) : static_cast<T>(a - static_cast<T>(alpha) * b);
    }
  }
};
struct Mul {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (detail::is_bool<T>) {  // bool: multiplication is logical and
      return a && b;
    } else if constexpr (detail::wraps<T>) {
      return detail::wrapping_mul(a, b);
    } else {
      return a * b;
    }
  }
};
struct Div {  // true division: op files convert integer inputs to float first
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const { return a / b; }
};
struct Pow {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      return detail::integer_pow(a, b);
    }
  }
};
// NaN wins, like torch.maximum / torch.minimum.
struct Maximum {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    return (a > b || detail::is_nan(a)) ? a : b;
  }
};
struct Minimum {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    return (a < b || detail::is_nan(a)) ? a : b;
  }
};

// An in-place op whose operands promote past the target's dtype (float16 += float32, float32 *=
// float64, int32 += int64) runs `functor` in the promoted type Wide, with the target's element
// widened exactly, so the result is rounded once into the target, as PyTorch's in-place ops
// compute in result_type. Rounding the operand to the target first would make a float32 1e5
// float16 inf. `promotes_past<Target, Wide>`: the storage pairs that take this path.
template <typename Wide, typename Functor>
struct Promoted {
  Functor functor;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE Wide operator()(T target, Wide other) const {
    return functor(static_cast<Wide>(target), other);
  }
};
// A narrower type of the same kind (a float into a wider float, int32 into int64), as an in-place
// result may be stored; bool is never a target here (in-place ops refuse a number into bool).
template <typename Target, typename Wide>
inline constexpr bool promotes_past = !detail::is_bool<Target> && sizeof(Target) < sizeof(Wide) &&
                                      std::is_integral_v<Target> == std::is_integral_v<Wide>;

// ---- comparisons (bool results) and selection ----
struct Eq {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Ne {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Lt {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a < b; }
};
struct Le {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Gt {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a > b; }
};
struct Ge {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct Where {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(bool condition, T a, T b) const {
    return condition ? a : b;
  }
};

// ---- with a host scalar ----
struct AddScalar {
  double value;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (detail::wraps<T>) {  // value is an integer of T's range (scalar_result_dtype)
      return detail::wrapping_add(a, static_cast<T>(value));
    } else {
      return static_cast<T>(a + static_cast<T>(value));
    }
  }
};
struct MulScalar {
  double value;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (sizeof(T) == 1) {  // bool: multiplication is logical and
      return static_cast<T>(a && value != 0.0);
    } else if constexpr (detail::wraps<T>) {
      return detail::wrapping_mul(a, static_cast<T>(value));
    } else {
      return static_cast<T>(a * static_cast<T>(value));
    }
  }
};
struct DivScalar {  // a / value (floating types only: integer tensors are promoted first)
  double value;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return a / static_cast<T>(value);
  }
};
struct RsubScalar {  // value - a
  double value;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (detail::wraps<T>) {
      return detail::wrapping_sub(static_cast<T>(value), a);
    } else {
      return static_cast<T>(static_cast<T>(value) - a);
    }
  }
};
struct RdivScalar {  // value / a (floating types only)
  double value;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return static_cast<T>(value) / a;
  }
};
// a ** value. The common exponents skip std::pow (as PyTorch does): squares dominate losses.
// Integer tensors only get here with a non-negative integral exponent.
struct PowScalar {
  double value;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (value == 2.0) return a * a;
      if (value == 1.0) return a;
      if (value == 0.5) return std::sqrt(a);
      if (value == 3.0) return a * a * a;
      if (value == -1.0) return T(1) / a;
      if (value == -0.5) return T(1) / std::sqrt(a);
      if (value == -2.0) return T(1) / (a * a);
      return std::pow(a, static_cast<T>(value));
    } else {
      return detail::integer_pow(a, static_cast<T>(value));
    }
  }
};
// min(max(a, min), max) with NaN kept; an absent bound is infinite. When min > max every element
// becomes max, like torch.clamp.
struct Clamp {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    // A NaN bound makes every element NaN, as in PyTorch (a comparison with it would ignore it).
    // Integer tensors are promoted to float32 by such a bound (clamp_shape), so T has NaN here.
    if constexpr (!detail::wraps<T> && !detail::is_bool<T>)
      if (min != min || max != max) return static_cast<T>(std::numeric_limits<float>::quiet_NaN());
    const T low = detail::saturate<T>(min);
    const T high = detail::saturate<T>(max);
    const T raised = a < low ? low : a;
    return raised > high ? high : raised;
  }
};

}  // namespace ember::fn
