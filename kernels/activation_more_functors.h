// The functors of the activations PyTorch has kernels for beyond unary_functors.h's: hardswish,
// hardsigmoid, mish and log_sigmoid, and the backward of these and of hardtanh (whose forward is
// fn::Clamp). Each formula is PyTorch's CPU kernel's (aten/src/ATen/native/cpu/Activation.cpp), so
// values and gradients agree at the kinks, at the infinities and at NaN; mish's is an equal closed
// form that costs a third as much.
#pragma once

#include "kernels/functor_math.h"

namespace ember::fn {

namespace detail {

// From x = 20 on, tanh(softplus(x)) rounds to 1 in float and double.
inline constexpr double kMishSaturation = 20.0;

// min(max(x + 3, 0), 6), NaN kept (both comparisons are false for it).
template <typename T>
EMBER_FORCE_INLINE EMBER_HOST_DEVICE T relu6_of_x_plus_3(T x) {
  const T shifted = x + T(3);
  const T raised = shifted < T(0) ? T(0) : shifted;
  return raised > T(6) ? T(6) : raised;
}

}  // namespace detail

// x min(max(x + 3, 0), 6) / 6: 0 (-0 for finite x, NaN at -inf) below -3, x above 3.
struct Hardswish {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    return x * detail::relu6_of_x_plus_3(x) / T(6);
  }
};
// min(max(x + 3, 0), 6) / 6.
struct Hardsigmoid {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    return detail::relu6_of_x_plus_3(x) / T(6);
  }
};
// x tanh(softplus(x)). With e = e^x, tanh(log(1 + e)) = n / (n + 2) where n = e (e + 2): one
// exponential and one division instead of an exponential, a logarithm and a tanh (5x faster on the
// CPU). From x = 20 on, tanh(softplus(x)) is 1 in float and double, and e^x is not evaluated there,
// so it never overflows. Tiny (or -0) for very negative x; NaN at NaN and at -inf (x 0), as PyTorch's.
struct Mish {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    const bool below = x < T(detail::kMishSaturation);
    const T e = math::exp(below ? x : T(detail::kMishSaturation));
    const T n = e * (e + T(2));
    return x * (below ? n / (n + T(2)) : T(1));
  }
};
// log(sigmoid(x)) = min(x, 0) - log1p(e^-|x|): x itself far below 0, -e^-x (not 0) far above.
struct LogSigmoid {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    const T negative_part = x < T(0) ? x : T(0);
    return negative_part - math::log1p(math::exp(-std::abs(x)));
  }
};

// ---- backward: (grad, saved input) -> grad_input ----
// 0 at and beyond the bounds, grad strictly between them and at NaN (PyTorch's hardtanh_backward).
// The members are read before the select (see LeakyReluBackward).
struct HardtanhBackward {
  double min_val = -1.0;
  double max_val = 1.0;
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T low = static_cast<T>(min_val);
    const T high = static_cast<T>(max_val);
    return x <= low || x >= high ? T(0) : grad;
  }
};
// 0 below -3, grad (x / 3 + 1/2) on [-3, 3], grad above 3 and at NaN.
struct HardswishBackward {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T middle = grad * (x / T(3) + T(0.5));
    return x < T(-3) ? T(0) : (x <= T(3) ? middle : grad);
  }
};
// grad / 6 strictly between -3 and 3, 0 at them, beyond and at NaN. Multiplied by 1/6 rounded to T,
// as PyTorch's kernels (one_sixth), so float results round as theirs (grad / 6 differs in the last bit
// for a third of them). PyTorch's float64 kernel takes float's 1/6 too (off by 3e-8); here it is double's.
struct HardsigmoidBackward {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    return x > T(-3) && x < T(3) ? grad * T(1.0 / 6.0) : T(0);
  }
};
// d(x tanh(sp(x)))/dx = t + x s (1 - t) (1 + t) with t = tanh(sp(x)) = n / (n + 2) as in Mish,
// 1 - t = 2 / (n + 2) (no cancellation as t nears 1) and s = sigmoid(x) = e / (1 + e). From x = 20 on,
// t = 1 and the second term is 0 (NaN at +inf, as PyTorch's x s (1 - t^2) is there).
struct MishBackward {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const bool below = x < T(detail::kMishSaturation);
    const T e = math::exp(below ? x : T(detail::kMishSaturation));
    const T n = e * (e + T(2));
    const T reciprocal = T(1) / (n + T(2));
    const T t = below ? n * reciprocal : T(1);
    const T one_minus_t = below ? T(2) * reciprocal : T(0);
    const T s = e / (T(1) + e);
    return grad * (t + x * s * one_minus_t * (T(1) + t));
  }
};
// 1 - z / (1 + z) below 0, z / (1 + z) from 0 on (1/2 at 0), with z = e^-|x|.
struct LogSigmoidBackward {
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T grad, T x) const {
    const T z = math::exp(-std::abs(x));
    const T ratio = z / (T(1) + z);
    return grad * (x < T(0) ? T(1) - ratio : ratio);
  }
};

}  // namespace ember::fn
