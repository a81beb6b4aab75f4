// CUDA kernels of the less common elementwise math (tan, asin, acos, atan, sinh, cosh, asinh,
// acosh, atanh, log2, log10, exp2, erfc, atan2, fmod, remainder), apart from pointwise_unary.cu so
// that neither file's instantiations slow the other's compile. Math: kernels/math_functors.h, as
// on the CPU, computed in compute_t (fp32 for 16-bit floats).
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/functors.h"

namespace ember::cuda {

namespace {

template <typename T, typename Functor>
int unary(void* out, const LaunchShape& shape, const Functor& functor, const StridedOperand& input) {
  return detail::launch_pointwise<T, T>(detail::dense_output(out), shape, functor, &input);
}

template <typename T, typename Functor>
int binary(void* out, const LaunchShape& shape, const Functor& functor, const StridedOperand& a,
           const StridedOperand& b) {
  const StridedOperand inputs[] = {a, b};
  return detail::launch_pointwise<T, T, T>(detail::dense_output(out), shape, functor, inputs);
}

}  // namespace

int launch_math_unary(MathUnaryOp op, DType dtype, void* out, const StridedOperand& input, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case MathUnaryOp::Tan: return unary<T>(out, shape, fn::Tan{}, input);
      case MathUnaryOp::Asin: return unary<T>(out, shape, fn::Asin{}, input);
      case MathUnaryOp::Acos: return unary<T>(out, shape, fn::Acos{}, input);
      case MathUnaryOp::Atan: return unary<T>(out, shape, fn::Atan{}, input);
      case MathUnaryOp::Sinh: return unary<T>(out, shape, fn::Sinh{}, input);
      case MathUnaryOp::Cosh: return unary<T>(out, shape, fn::Cosh{}, input);
      case MathUnaryOp::Asinh: return unary<T>(out, shape, fn::Asinh{}, input);
      case MathUnaryOp::Acosh: return unary<T>(out, shape, fn::Acosh{}, input);
      case MathUnaryOp::Atanh: return unary<T>(out, shape, fn::Atanh{}, input);
      case MathUnaryOp::Log2: return unary<T>(out, shape, fn::Log2{}, input);
      case MathUnaryOp::Log10: return unary<T>(out, shape, fn::Log10{}, input);
      case MathUnaryOp::Exp2: return unary<T>(out, shape, fn::Exp2{}, input);
      case MathUnaryOp::Erfc: return unary<T>(out, shape, fn::Erfc{}, input);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

int launch_math_binary(MathBinaryOp op, DType dtype, void* out, const StridedOperand& a, const StridedOperand& b,
                       const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  if (op == MathBinaryOp::Atan2) {
    return detail::dispatch_floating(dtype,
                                     [&](auto zero) { return binary<decltype(zero)>(out, shape, fn::Atan2{}, a, b); });
  }
  return detail::dispatch_numeric(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (op == MathBinaryOp::Fmod) return binary<T>(out, shape, fn::Fmod{}, a, b);
    return binary<T>(out, shape, fn::Remainder{}, a, b);
  });
}

}  // namespace ember::cuda
