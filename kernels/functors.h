// The math of every pointwise op, written once. Each functor is called by the CPU iterator
// (kernels/cpu/pointwise_loop.h), by CUDA kernels, and by generated code (the compile stage emits
// `ember::fn::Add{alpha}(a, b)`), so CPU tests exercise the same expressions the GPU runs.
// Functors take and return compute types (float, double, int32_t, int64_t, bool).
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace ember::fn {

// ---- binary ----
struct Add {
  double alpha = 1.0;  // a + alpha * b
  template <typename T> EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (sizeof(T) == 1) {  // bool: addition is logical or, like PyTorch
      return static_cast<T>(a || (b && alpha != 0.0));
    } else {
      return alpha == 1.0 ? static_cast<T>(a + b) : static_cast<T>(a + static_cast<T>(alpha) * b);
    }
  }
};
struct Sub {
  double alpha = 1.0;  // a - alpha * b
  template <typename T> EMBER_HOST_DEVICE T operator()(T a, T b) const {
    return alpha == 1.0 ? static_cast<T>(a - b) : static_cast<T>(a - static_cast<T>(alpha) * b);
  }
};
struct Mul {
  template <typename T> EMBER_HOST_DEVICE T operator()(T a, T b) const { return a * b; }
};
struct Div {
  template <typename T> EMBER_HOST_DEVICE T operator()(T a, T b) const { return a / b; }
};

// ---- with a host scalar ----
struct AddScalar {
  double value;
  template <typename T> EMBER_HOST_DEVICE T operator()(T a) const { return static_cast<T>(a + static_cast<T>(value)); }
};
struct MulScalar {
  double value;
  template <typename T> EMBER_HOST_DEVICE T operator()(T a) const {
    if constexpr (sizeof(T) == 1) {  // bool: multiplication is logical and
      return static_cast<T>(a && value != 0.0);
    } else {
      return static_cast<T>(a * static_cast<T>(value));
    }
  }
};

// ---- conversion and fill ----
struct Identity {
  template <typename T> EMBER_HOST_DEVICE T operator()(T a) const { return a; }
};

}  // namespace ember::fn
