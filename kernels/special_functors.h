// The functors of torch.special's pointwise functions (kernels/functors.h says how functors are
// written and called): lgamma, digamma, polygamma, erfinv, i0, i0e, i1, i1e, ndtri, log_ndtr and
// erfcx. Floating only (the op files turn integers into float32 first).
//
// Each computes in double (special_gamma.h, special_error.h, special_bessel.h) and rounds once to
// its type: a float result is then within an ulp of the true value with one algorithm for both
// types, where a float-only approximation would need its own error analysis per function. These
// functions are rarely a model's hot loop (a likelihood's few lgamma calls per element), and the
// double work is a few dozen operations on a GPU whose double rate is half its float rate (H100).
#pragma once

#include <cstdint>

#include "kernels/special_bessel.h"
#include "kernels/special_error.h"
#include "kernels/special_gamma.h"

namespace ember::fn {

#define EMBER_SPECIAL_UNARY(Name, function)                             \
  struct Name {                                                         \
    template <typename T>                                               \
    EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {      \
      return static_cast<T>(special::function(static_cast<double>(a))); \
    }                                                                   \
  };
EMBER_SPECIAL_UNARY(Lgamma, lgamma)     // log|Gamma(x)|
EMBER_SPECIAL_UNARY(Digamma, digamma)   // d/dx log Gamma(x)
EMBER_SPECIAL_UNARY(Erfinv, erfinv)     // the y with erf(y) = x
EMBER_SPECIAL_UNARY(I0, i0)             // modified Bessel function of the first kind, order 0
EMBER_SPECIAL_UNARY(I0e, i0e)           // e^-|x| i0(x)
EMBER_SPECIAL_UNARY(I1, i1)             // order 1
EMBER_SPECIAL_UNARY(I1e, i1e)           // e^-|x| i1(x)
EMBER_SPECIAL_UNARY(Ndtri, ndtri)       // inverse of the standard normal CDF
EMBER_SPECIAL_UNARY(LogNdtr, log_ndtr)  // log of the standard normal CDF
EMBER_SPECIAL_UNARY(Erfcx, erfcx)       // e^(x^2) erfc(x)
#undef EMBER_SPECIAL_UNARY

// The n-th derivative of digamma (n >= 0, checked by the op).
struct Polygamma {
  int64_t n = 0;
  template <typename T>
  EMBER_FORCE_INLINE EMBER_HOST_DEVICE T operator()(T a) const {
    return static_cast<T>(special::polygamma(static_cast<long long>(n), static_cast<double>(a)));
  }
};

}  // namespace ember::fn
