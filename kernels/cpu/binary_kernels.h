// Shared machinery for CPU pointwise kernels: run a functor over inputs converted to one dtype.
#pragma once

#include "kernels/binary_functors.h"
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

// The operand (0 or 1) that add, sub, mul and div read unrounded, or -1: a 0-d operand of another
// dtype than a bfloat16/float16 result. PyTorch takes such an operand as a float (opmath)
// scalar rather than first rounding it to 16 bits, so the result is rounded once: bf16 100 *
// f32 1.004 is 100.5 there (100.4 rounded), not 101 (100 * 1.0078 rounded). Its CPU loops do so
// for the second operand only, its CUDA loops for either; ember does for either, so a*s == s*a.
int unrounded_scalar_operand(const Tensor& out, const Tensor& a, const Tensor& b);
// The value of a 0-d CPU tensor, in double (exact for every dtype but int64 beyond 2^53).
double scalar_value(const Tensor& scalar);

// If unrounded_scalar_operand finds one, out = functor(a, b) with that operand held at float
// precision, the same value the host-scalar ops (mul(x, 1.004)) use; returns whether it ran.
template <typename Functor>
bool binary_unrounded_scalar(const Tensor& out, const Tensor& a, const Tensor& b, Functor functor) {
  const int position = unrounded_scalar_operand(out, a, b);
  if (position < 0) return false;
  const float value = static_cast<float>(scalar_value(position == 0 ? a : b));
  const Tensor other = as_dtype(position == 0 ? b : a, out.dtype());
  dispatch_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<compute_t<T>, float>) {
      if (position == 0) {
        pointwise_cpu<T, T>(out, [=](float x) { return functor(value, x); }, other);
      } else {
        pointwise_cpu<T, T>(out, [=](float x) { return functor(x, value); }, other);
      }
    }
  });
  return true;
}

// target = functor(target, other) for an in-place op whose result_type `compute` is wider than the
// target's dtype: computed in `compute`, rounded once into the target (see fn::Promoted). A
// float64 result reaches a 16-bit target through float32, as PyTorch's Half(double) does.
template <typename Functor>
void binary_inplace_promoted(const Tensor& target, const Tensor& other, DType compute, Functor functor) {
  const Tensor other_cast = as_dtype(other, compute);
  dispatch_dtype(compute, [&](auto wide_zero) {
    using Wide = std::decay_t<decltype(wide_zero)>;  // GCC sees the captured name as a reference
    dispatch_dtype(target.dtype(), [&](auto target_zero) {
      using T = decltype(target_zero);
      if constexpr (fn::promotes_past<T, Wide>) {
        pointwise_cpu<T, T, Wide>(target, fn::Promoted<Wide, Functor>{functor}, target, other_cast);
      } else {
        internal_assert(false, "binary_inplace_promoted: the compute dtype does not widen the target's");
      }
    });
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
