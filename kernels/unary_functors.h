// The pointwise functors of one operand: math, activations and their backward, conversion
// (kernels/functors.h says how every functor is written and called).
#pragma once

#include "kernels/functor_math.h"

namespace ember::fn {

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

// ---- rounding: floating values round, integers pass through unchanged (as in PyTorch) ----
// std::floor, ceil, trunc and nearbyint are single instructions on x86 (roundps) and CUDA, so the
// loops vectorize.
struct Floor {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::floor(a);
    } else {
      return a;
    }
  }
};
struct Ceil {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::ceil(a);
    } else {
      return a;
    }
  }
};
// Halves round to even, like torch.round (std::round would take 2.5 to 3): nearbyint rounds in the
// default rounding mode, round-to-nearest-even, which nothing in ember changes.
struct Round {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::nearbyint(a);
    } else {
      return a;
    }
  }
};
struct Trunc {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::trunc(a);
    } else {
      return a;
    }
  }
};

// ---- unary: floating only ----
struct Exp {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::exp(a); }
};
struct Expm1 {  // e^x - 1 without the cancellation near 0
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::expm1(a); }
};
struct Sin {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::sin(a); }
};
struct Cos {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::cos(a); }
};
struct Erf {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const { return math::erf(a); }
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
// x above 0, negative_slope * x elsewhere, as torch's leaky_relu (0 and -0.0 keep their sign, NaN
// passes).
struct LeakyRelu {
  double negative_slope = 0.01;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    const T slope = static_cast<T>(negative_slope);  // read outside the select: see LeakyReluBackward
    return x > T(0) ? x : x * slope;
  }
};
// x above 0, alpha * (e^x - 1) elsewhere, through expm1 as PyTorch's kernels (e^x - 1 would keep
// no digits for small x).
struct Elu {
  double alpha = 1.0;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    const T scale = static_cast<T>(alpha);  // read outside the select: see LeakyReluBackward
    return x <= T(0) ? math::expm1(x) * scale : x;
  }
};
// log(1 + e^(beta x)) / beta, and x itself where beta x > threshold, as torch's softplus. The log
// is taken as max(z, 0) + log1p(e^-|z|), equal to log1p(e^z) but never overflowing: PyTorch's
// float kernel gives inf for z in (88.7, threshold] when threshold is set above 88.
struct Softplus {
  double beta = 1.0;
  double threshold = 20.0;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    const T scaled = x * static_cast<T>(beta);
    const T positive_part = scaled > T(0) ? scaled : T(0);
    const T smooth = (positive_part + math::log1p(math::exp(-std::abs(scaled)))) / static_cast<T>(beta);
    return scaled > static_cast<T>(threshold) ? x : smooth;
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
// Saved: the output. PyTorch's threshold_backward (output <= 0 ? 0 : grad): a NaN output, from a
// NaN input, passes the gradient.
struct ReluBackward {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T output) const {
    return output <= T(0) ? T(0) : grad;
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
// Saved: the input. At 0 the gradient is negative_slope (x > 0 decides), as PyTorch's.
// The member is read before the select: read only in one arm, its load is conditional, GCC will
// not speculate it, and the loop stays scalar with a branch per element (leaky_relu ran at 8 ns
// an element on random signs, 14x silu).
struct LeakyReluBackward {
  double negative_slope = 0.01;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T slope = static_cast<T>(negative_slope);
    return x > T(0) ? grad : grad * slope;
  }
};
// Saved: the input; d(alpha (e^x - 1))/dx = alpha e^x for x <= 0 (so alpha at 0, as PyTorch's).
struct EluBackward {
  double alpha = 1.0;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T scale = static_cast<T>(alpha);  // read outside the select: see LeakyReluBackward
    return x <= T(0) ? grad * scale * math::exp(x) : grad;
  }
};
// Saved: the input; the derivative is sigmoid(beta x), 1 past the threshold. PyTorch writes it
// e^z / (e^z + 1), which is NaN once e^z overflows; the sigmoid has the same values and does not.
struct SoftplusBackward {
  double beta = 1.0;
  double threshold = 20.0;
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T scaled = x * static_cast<T>(beta);
    return scaled > static_cast<T>(threshold) ? grad : grad * detail::sigmoid(scaled);
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
