// CUDA kernels of the less common elementwise math (runtime/ops/math_ops.cpp has the ops, their
// shape rules and gradients): inputs converted to the output's dtype as the CPU kernels do, one
// launch of kernels/cuda/pointwise_math.cu each.
#include "kernels/cuda/pointwise.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/dispatch.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

template <MathUnaryOp op>
void math_unary_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor input = as_dtype(call.input(0), out.dtype());
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_math_unary(op, out.dtype(), out.raw_data_ptr(), operand_of(input, shape), shape));
}

template <MathBinaryOp op>
void math_binary_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  // A read of the divisor waits for the device, and inside a capture would be recorded (a graph
  // break): there a zero integer divisor gives 0, as the functor's guard makes it.
  if (op != MathBinaryOp::Atan2 && out.numel() > 0 && !dispatch_mode_active())
    ops::check_integer_divisor(call, out.dtype());
  const Tensor a = as_dtype(call.input(0), out.dtype());
  const Tensor b = as_dtype(call.input(1), out.dtype());
  const LaunchShape shape = shape_of(out);
  launch_checked(
      launch_math_binary(op, out.dtype(), out.raw_data_ptr(), operand_of(a, shape), operand_of(b, shape), shape));
}

void register_math_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("tan", kCuda, math_unary_cuda<MathUnaryOp::Tan>);
  registry.set_kernel("asin", kCuda, math_unary_cuda<MathUnaryOp::Asin>);
  registry.set_kernel("acos", kCuda, math_unary_cuda<MathUnaryOp::Acos>);
  registry.set_kernel("atan", kCuda, math_unary_cuda<MathUnaryOp::Atan>);
  registry.set_kernel("sinh", kCuda, math_unary_cuda<MathUnaryOp::Sinh>);
  registry.set_kernel("cosh", kCuda, math_unary_cuda<MathUnaryOp::Cosh>);
  registry.set_kernel("asinh", kCuda, math_unary_cuda<MathUnaryOp::Asinh>);
  registry.set_kernel("acosh", kCuda, math_unary_cuda<MathUnaryOp::Acosh>);
  registry.set_kernel("atanh", kCuda, math_unary_cuda<MathUnaryOp::Atanh>);
  registry.set_kernel("log2", kCuda, math_unary_cuda<MathUnaryOp::Log2>);
  registry.set_kernel("log10", kCuda, math_unary_cuda<MathUnaryOp::Log10>);
  registry.set_kernel("exp2", kCuda, math_unary_cuda<MathUnaryOp::Exp2>);
  registry.set_kernel("erfc", kCuda, math_unary_cuda<MathUnaryOp::Erfc>);
  registry.set_kernel("atan2", kCuda, math_binary_cuda<MathBinaryOp::Atan2>);
  registry.set_kernel("fmod", kCuda, math_binary_cuda<MathBinaryOp::Fmod>);
  registry.set_kernel("remainder", kCuda, math_binary_cuda<MathBinaryOp::Remainder>);
}

const OpRegistration registration(register_math_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
