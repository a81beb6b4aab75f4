// CUDA kernels of the one-input pointwise ops that keep integer dtypes (neg, abs, sign, relu,
// clamp, pow_scalar, rsub_scalar, floor, ceil, round, trunc) and of the floating-only ones (exp,
// expm1, log, log1p, erf, sin, cos, sqrt, rsqrt, reciprocal, div_scalar, rdiv_scalar). Math:
// kernels/functors.h, as on the CPU.
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/functors.h"

namespace ember::cuda {

namespace {

template <typename T, typename Functor>
int unary(void* out, const LaunchShape& shape, const Functor& functor, const StridedOperand& input) {
  return detail::launch_pointwise<T, T>(detail::dense_output(out), shape, functor, &input);
}

}  // namespace

int launch_numeric_unary(NumericUnaryOp op, const UnaryAttrs& attrs, DType dtype, void* out,
                         const StridedOperand& input, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  if (op == NumericUnaryOp::Sign) {
    return detail::dispatch_all(dtype, [&](auto zero) { return unary<decltype(zero)>(out, shape, fn::Sign{}, input); });
  }
  return detail::dispatch_numeric(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case NumericUnaryOp::Neg: return unary<T>(out, shape, fn::Neg{}, input);
      case NumericUnaryOp::Abs: return unary<T>(out, shape, fn::Abs{}, input);
      case NumericUnaryOp::Relu: return unary<T>(out, shape, fn::Relu{}, input);
      case NumericUnaryOp::Clamp: return unary<T>(out, shape, fn::Clamp{attrs.min, attrs.max}, input);
      case NumericUnaryOp::PowScalar: return unary<T>(out, shape, fn::PowScalar{attrs.value}, input);
      case NumericUnaryOp::RsubScalar: return unary<T>(out, shape, fn::RsubScalar{attrs.value}, input);
      case NumericUnaryOp::Floor: return unary<T>(out, shape, fn::Floor{}, input);
      case NumericUnaryOp::Ceil: return unary<T>(out, shape, fn::Ceil{}, input);
      case NumericUnaryOp::Round: return unary<T>(out, shape, fn::Round{}, input);
      case NumericUnaryOp::Trunc: return unary<T>(out, shape, fn::Trunc{}, input);
      default: return static_cast<int>(cudaErrorInvalidValue);
    }
  });
}

int launch_float_unary(FloatUnaryOp op, double value, DType dtype, void* out, const StridedOperand& input,
                       const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case FloatUnaryOp::Exp: return unary<T>(out, shape, fn::Exp{}, input);
      case FloatUnaryOp::Log: return unary<T>(out, shape, fn::Log{}, input);
      case FloatUnaryOp::Log1p: return unary<T>(out, shape, fn::Log1p{}, input);
      case FloatUnaryOp::Sqrt: return unary<T>(out, shape, fn::Sqrt{}, input);
      case FloatUnaryOp::Rsqrt: return unary<T>(out, shape, fn::Rsqrt{}, input);
      case FloatUnaryOp::Reciprocal: return unary<T>(out, shape, fn::Reciprocal{}, input);
      case FloatUnaryOp::DivScalar: return unary<T>(out, shape, fn::DivScalar{value}, input);
      case FloatUnaryOp::RdivScalar: return unary<T>(out, shape, fn::RdivScalar{value}, input);
      case FloatUnaryOp::Expm1: return unary<T>(out, shape, fn::Expm1{}, input);
      case FloatUnaryOp::Erf: return unary<T>(out, shape, fn::Erf{}, input);
      case FloatUnaryOp::Sin: return unary<T>(out, shape, fn::Sin{}, input);
      case FloatUnaryOp::Cos: return unary<T>(out, shape, fn::Cos{}, input);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

}  // namespace ember::cuda
