// The math of every pointwise op, written once. Each functor is called by the CPU iterator
// (kernels/cpu/pointwise_loop.h), by CUDA kernels, and by generated code (the compile stage emits
// `ember::fn::Add{alpha}(a, b)`), so CPU tests exercise the same expressions the GPU runs.
// Functors take and return compute types (float, double, int32_t, int64_t, bool); comparisons
// return bool. Op files decide dtypes (float-only ops never see integers), functors only compute.
// Branches are selects on the element (vectorizable) or on a member (hoisted out of the loop).
// Call operators are force-inlined on the host: a loop only vectorizes with its functor inlined.
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

// ---- unary: integer and floating ----
struct Neg {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return detail::negate(a);
  }
};
struct Abs {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(a);
    } else {
      return a < T(0) ? detail::negate(a) : a;
    }
  }
};
struct Sign {  // -1, 0 or 1; NaN gives 0 like PyTorch 1.13
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (detail::is_bool<T>) {
      return a;
    } else {
      return static_cast<T>(static_cast<int>(T(0) < a) - static_cast<int>(a < T(0)));
    }
  }
};
struct Relu {  // NaN passes through, like torch.relu
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return a < T(0) ? T(0) : a;
  }
};

// ---- unary: floating only ----
struct Exp {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::exp(a); }
};
struct Log {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::log(a); }
};
struct Log1p {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::log1p(a); }
};
struct Sqrt {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return std::sqrt(a); }
};
struct Rsqrt {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return T(1) / std::sqrt(a);
  }
};
struct Reciprocal {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return T(1) / a; }
};
struct Sigmoid {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return detail::sigmoid(a);
  }
};
struct Tanh {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::tanh(a); }
};
struct Silu {  // x * sigmoid(x)
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return a * detail::sigmoid(a);
  }
};
// Exact GELU: x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)), with Phi evaluated without the
// cancellation of 1 + erf for negative x.
struct GeluErf {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    T density;
    return x * math::normal_cdf(x, density);
  }
};
// Tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluTanh {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    const T inner = T(detail::kSqrtTwoOverPi) * (x + T(detail::kGeluKappa) * x * x * x);
    return T(0.5) * x * (T(1) + math::tanh(inner));
  }
};
// The gelu op's functor (attr tanh). CPU kernels pick GeluErf or GeluTanh once per call instead:
// GCC cannot vectorize a loop that selects on a bool member per element.
struct Gelu {
  bool tanh_approximation = false;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    return tanh_approximation ? GeluTanh{}(x) : GeluErf{}(x);
  }
};

// ---- backward of activations: (grad, saved) -> grad_input ----
struct ReluBackward {  // saved: the output
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T output) const {
    return output > T(0) ? grad : T(0);
  }
};
struct SigmoidBackward {  // saved: the output s; ds/dx = s (1 - s)
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T output) const {
    return grad * (T(1) - output) * output;
  }
};
struct TanhBackward {  // saved: the output t; dt/dx = 1 - t^2
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T output) const {
    return grad * (T(1) - output * output);
  }
};
struct SiluBackward {  // saved: the input; d(x s)/dx = s (1 + x (1 - s))
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T s = detail::sigmoid(x);
    return grad * s * (T(1) + x * (T(1) - s));
  }
};
// Saved: the input. Exact: d(x Phi(x))/dx = Phi(x) + x phi(x).
struct GeluErfBackward {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    T density;
    const T cdf = math::normal_cdf(x, density);
    return grad * (cdf + x * density);
  }
};
// Tanh approximation: PyTorch's derivative of its formula.
struct GeluTanhBackward {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T beta = T(detail::kSqrtTwoOverPi);
    const T kappa = T(detail::kGeluKappa);
    const T x_squared = x * x;
    const T tanh_inner = math::tanh(beta * (x + kappa * x_squared * x));
    const T left_derivative = T(0.5) * (T(1) + tanh_inner);
    const T right_derivative =
        T(0.5) * x * (T(1) - tanh_inner * tanh_inner) * beta * (T(1) + T(3) * kappa * x_squared);
    return grad * (left_derivative + right_derivative);
  }
};
// The gelu_backward op's functor (attr tanh); CPU kernels pick one of the two above per call.
struct GeluBackward {
  bool tanh_approximation = false;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    return tanh_approximation ? GeluTanhBackward{}(grad, x) : GeluErfBackward{}(grad, x);
  }
};

// ---- conversion and fill ----
struct Identity {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return a; }
};

}  // namespace ember::fn
