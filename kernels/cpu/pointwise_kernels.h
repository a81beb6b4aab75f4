// Generic CPU kernels for pointwise ops: each converts its inputs to the dtype the op computes in
// (decided by the op's shape rule, see runtime/ops/pointwise_common.h), picks the C++ type with
// one dtype switch and runs a functor from kernels/functors.h through pointwise_cpu. Op files
// register e.g. `cpu::unary_floating_kernel<fn::Exp>`; ops whose functor takes attributes write a
// one-line kernel around the helpers below.
#pragma once

#include <string_view>
#include <type_traits>

#include "kernels/cpu/binary_kernels.h"

namespace ember::cpu {

// Calls fn(T{}) for every dtype but bool; bool is an error naming `op` (shape rules reject bool
// before a kernel runs, so this only keeps functors from being instantiated for bool).
template <typename Fn>
void dispatch_numeric(DType dtype, std::string_view op, Fn&& fn) {
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      fail("{}: bool tensors are not supported", op);
    } else {
      fn(zero);
    }
  });
}

// out = functor(a) in out's dtype, which must be floating (integer inputs are converted).
template <typename Functor>
void unary_floating(const Tensor& out, const Tensor& a, Functor functor, std::string_view op) {
  const Tensor a_cast = as_dtype(a, out.dtype());
  dispatch_floating(out.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T>(out, functor, a_cast);
  });
}

// out = functor(a) in out's dtype, any dtype but bool.
template <typename Functor>
void unary_numeric(const Tensor& out, const Tensor& a, Functor functor, std::string_view op) {
  const Tensor a_cast = as_dtype(a, out.dtype());
  dispatch_numeric(out.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T>(out, functor, a_cast);
  });
}

// out = functor(a, b) in out's dtype, which must be floating.
template <typename Functor>
void binary_floating(const Tensor& out, const Tensor& a, const Tensor& b, Functor functor,
                     std::string_view op) {
  const Tensor a_cast = as_dtype(a, out.dtype());
  const Tensor b_cast = as_dtype(b, out.dtype());
  dispatch_floating(out.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T, T>(out, functor, a_cast, b_cast);
  });
}

// out = functor(a, b) in out's dtype, any dtype but bool.
template <typename Functor>
void binary_numeric(const Tensor& out, const Tensor& a, const Tensor& b, Functor functor,
                    std::string_view op) {
  const Tensor a_cast = as_dtype(a, out.dtype());
  const Tensor b_cast = as_dtype(b, out.dtype());
  dispatch_numeric(out.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T, T>(out, functor, a_cast, b_cast);
  });
}

// out = condition ? a : b, with a and b converted to out's dtype; condition is bool.
void where_cpu(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b);

// ---- kernels for ops whose functor takes no attributes ----
template <typename Functor>
void unary_floating_kernel(const OpCall& call, TensorList& outputs) {
  unary_floating(outputs[0], call.input(0), Functor{}, call.op.name);
}
template <typename Functor>
void unary_numeric_kernel(const OpCall& call, TensorList& outputs) {
  unary_numeric(outputs[0], call.input(0), Functor{}, call.op.name);
}
template <typename Functor>
void unary_any_kernel(const OpCall& call, TensorList& outputs) {
  unary_same_dtype(outputs[0], call.input(0), Functor{});
}
template <typename Functor>
void binary_floating_kernel(const OpCall& call, TensorList& outputs) {
  binary_floating(outputs[0], call.input(0), call.input(1), Functor{}, call.op.name);
}
template <typename Functor>
void binary_numeric_kernel(const OpCall& call, TensorList& outputs) {
  binary_numeric(outputs[0], call.input(0), call.input(1), Functor{}, call.op.name);
}
template <typename Functor>
void binary_any_kernel(const OpCall& call, TensorList& outputs) {
  binary_same_dtype(outputs[0], call.input(0), call.input(1), Functor{});
}
template <typename Functor>
void compare_kernel(const OpCall& call, TensorList& outputs) {
  compare(outputs[0], call.input(0), call.input(1), Functor{});
}
// out (bool) = functor(a) with a read in its own dtype (isnan, logical_not).
template <typename Functor>
void predicate_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<bool, T>(outputs[0], Functor{}, a);
  });
}

}  // namespace ember::cpu
