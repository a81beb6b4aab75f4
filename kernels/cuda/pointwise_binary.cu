// CUDA kernels of the tensor-tensor arithmetic ops add, sub, mul, div, maximum, minimum, pow and
// of add_scalar, mul_scalar, into a dense output or an in-place target's strides (add_ and mul_
// also in a dtype wider than their target's). Math: kernels/functors.h, computed in compute_t (fp32
// for 16-bit floats) like the CPU kernels.
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/functors.h"

namespace ember::cuda {

namespace {

template <typename T, typename Functor>
int binary(const OutputOperand& out, const LaunchShape& shape, const Functor& functor, const StridedOperand& a,
           const StridedOperand& b) {
  const StridedOperand inputs[] = {a, b};
  return detail::launch_pointwise<T, T, T>(out, shape, functor, inputs);
}

}  // namespace

int launch_binary_into(BinaryOp op, double alpha, DType dtype, const OutputOperand& out, const StridedOperand& a,
                       const StridedOperand& b, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  // Div and Pow are never asked for bool (the op files convert or reject first).
  if (op == BinaryOp::Div || op == BinaryOp::Pow) {
    return detail::dispatch_numeric(dtype, [&](auto zero) {
      using T = decltype(zero);
      if (op == BinaryOp::Div) return binary<T>(out, shape, fn::Div{}, a, b);
      return binary<T>(out, shape, fn::Pow{}, a, b);
    });
  }
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case BinaryOp::Add: return binary<T>(out, shape, fn::Add{alpha}, a, b);
      case BinaryOp::Mul: return binary<T>(out, shape, fn::Mul{}, a, b);
      case BinaryOp::Maximum: return binary<T>(out, shape, fn::Maximum{}, a, b);
      case BinaryOp::Minimum: return binary<T>(out, shape, fn::Minimum{}, a, b);
      default: break;
    }
    if constexpr (std::is_same_v<T, bool>) {
      return static_cast<int>(cudaErrorInvalidValue);  // bool subtraction is rejected by sub's shape rule
    } else {
      return binary<T>(out, shape, fn::Sub{alpha}, a, b);
    }
  });
}

int launch_binary_into_promoted(BinaryOp op, double alpha, DType dtype, DType compute, const OutputOperand& out,
                                const StridedOperand& a, const StridedOperand& b, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const StridedOperand inputs[] = {a, b};
  return detail::dispatch_numeric(compute, [&](auto wide_zero) {
    using Wide = std::decay_t<decltype(wide_zero)>;  // GCC sees the captured name as a reference
    return detail::dispatch_numeric(dtype, [&](auto target_zero) {
      using T = decltype(target_zero);
      if constexpr (fn::promotes_past<T, Wide>) {
        if (op == BinaryOp::Add)
          return detail::launch_pointwise<T, T, Wide>(out, shape, fn::Promoted<Wide, fn::Add>{fn::Add{alpha}}, inputs);
        if (op == BinaryOp::Mul)
          return detail::launch_pointwise<T, T, Wide>(out, shape, fn::Promoted<Wide, fn::Mul>{fn::Mul{}}, inputs);
      }
      return static_cast<int>(cudaErrorInvalidValue);  // only add_ and mul_ promote past their target
    });
  });
}

int launch_binary(BinaryOp op, double alpha, DType dtype, void* out, const StridedOperand& a,
                  const StridedOperand& b, const LaunchShape& shape) {
  OutputOperand dense;
  dense.data = out;
  return launch_binary_into(op, alpha, dtype, dense, a, b, shape);
}

int launch_scalar_into(ScalarOp op, double value, DType dtype, const OutputOperand& out,
                       const StridedOperand& input, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (op == ScalarOp::AddScalar) return detail::launch_pointwise<T, T>(out, shape, fn::AddScalar{value}, &input);
    return detail::launch_pointwise<T, T>(out, shape, fn::MulScalar{value}, &input);
  });
}

int launch_scalar(ScalarOp op, double value, DType dtype, void* out, const StridedOperand& input,
                  const LaunchShape& shape) {
  OutputOperand dense;
  dense.data = out;
  return launch_scalar_into(op, value, dtype, dense, input, shape);
}

}  // namespace ember::cuda
