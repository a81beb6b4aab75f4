// The pointwise functors with bool results that test values rather than compare two of them:
// isnan, isinf, isfinite and the logical ops (kernels/functors.h says how functors are written).
// Every dtype is accepted, as in PyTorch: integers and bool are never NaN or infinite, and the
// logical ops read any value as "nonzero" (NaN is nonzero, -0.0 is zero).
#pragma once

#include "kernels/functor_math.h"

namespace ember::fn {

struct IsNan {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a) const { return detail::is_nan(a); }
};
struct IsInf {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(a) == std::numeric_limits<T>::infinity();
    } else {
      return false;
    }
  }
};
// NaN compares false with everything, so one comparison excludes NaN and both infinities.
struct IsFinite {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(a) < std::numeric_limits<T>::infinity();
    } else {
      return true;
    }
  }
};

struct LogicalNot {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a) const { return a == T(0); }
};
struct LogicalAnd {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return (a != T(0)) & (b != T(0));  // & rather than &&: no branch, the loop vectorizes
  }
};
struct LogicalOr {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return (a != T(0)) | (b != T(0));
  }
};
struct LogicalXor {
  template <typename T> EMBER_FORCE_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return (a != T(0)) != (b != T(0));
  }
};

}  // namespace ember::fn
