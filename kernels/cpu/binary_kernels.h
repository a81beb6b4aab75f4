// Shared machinery for CPU pointwise kernels: run a functor over inputs converted to one dtype.
#pragma once

#include "kernels/cpu/pointwise_loop.h"
#include "runtime/ops/registry.h"

namespace ember::cpu {

// `tensor` in `dtype`, converting only when needed (mixed-dtype calls pay one conversion).
Tensor as_dtype(const Tensor& tensor, DType dtype);

// out = functor(a, b) with a and b converted to out's dtype first.
template <typename Functor>
void binary_same_dtype(const Tensor& out, const Tensor& a, const Tensor& b, Functor functor) {
  const Tensor a_cast = as_dtype(a, out.dtype());
  const Tensor b_cast = as_dtype(b, out.dtype());
  dispatch_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T, T>(out, functor, a_cast, b_cast);
  });
}

// out = functor(a) with a converted to out's dtype first.
template <typename Functor>
void unary_same_dtype(const Tensor& out, const Tensor& a, Functor functor) {
  const Tensor a_cast = as_dtype(a, out.dtype());
  dispatch_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T>(out, functor, a_cast);
  });
}

// out (bool) = functor(a, b) comparing in the dtype of a and b together (result_type).
template <typename Functor>
void compare(const Tensor& out, const Tensor& a, const Tensor& b, Functor functor) {
  const DType common = result_type(a.dtype(), a.dim() == 0, b.dtype(), b.dim() == 0);
  const Tensor a_cast = as_dtype(a, common);
  const Tensor b_cast = as_dtype(b, common);
  dispatch_dtype(common, [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<bool, T, T>(out, functor, a_cast, b_cast);
  });
}

}  // namespace ember::cpu
