// CUDA kernels of the activations sigmoid, tanh, silu, gelu (erf and tanh forms), leaky_relu, elu,
// softplus, hardtanh, hardswish, hardsigmoid, mish, log_sigmoid and of their registered backward
// ops, floating dtypes only. Math: kernels/functors.h, as on the CPU.
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/functors.h"

namespace ember::cuda {

int launch_activation(ActivationOp op, const ActivationAttrs& attrs, DType dtype, void* out,
                      const StridedOperand& input, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const OutputOperand dense = detail::dense_output(out);
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case ActivationOp::Sigmoid: return detail::launch_pointwise<T, T>(dense, shape, fn::Sigmoid{}, &input);
      case ActivationOp::Tanh: return detail::launch_pointwise<T, T>(dense, shape, fn::Tanh{}, &input);
      case ActivationOp::Silu: return detail::launch_pointwise<T, T>(dense, shape, fn::Silu{}, &input);
      case ActivationOp::GeluErf: return detail::launch_pointwise<T, T>(dense, shape, fn::GeluErf{}, &input);
      case ActivationOp::GeluTanh: return detail::launch_pointwise<T, T>(dense, shape, fn::GeluTanh{}, &input);
      case ActivationOp::LeakyRelu:
        return detail::launch_pointwise<T, T>(dense, shape, fn::LeakyRelu{attrs.negative_slope}, &input);
      case ActivationOp::Elu: return detail::launch_pointwise<T, T>(dense, shape, fn::Elu{attrs.alpha}, &input);
      case ActivationOp::Softplus:
        return detail::launch_pointwise<T, T>(dense, shape, fn::Softplus{attrs.beta, attrs.threshold}, &input);
      case ActivationOp::Hardtanh:
        return detail::launch_pointwise<T, T>(dense, shape, fn::Clamp{attrs.min_val, attrs.max_val}, &input);
      case ActivationOp::Hardswish: return detail::launch_pointwise<T, T>(dense, shape, fn::Hardswish{}, &input);
      case ActivationOp::Hardsigmoid: return detail::launch_pointwise<T, T>(dense, shape, fn::Hardsigmoid{}, &input);
      case ActivationOp::Mish: return detail::launch_pointwise<T, T>(dense, shape, fn::Mish{}, &input);
      case ActivationOp::LogSigmoid: return detail::launch_pointwise<T, T>(dense, shape, fn::LogSigmoid{}, &input);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

int launch_activation_backward(ActivationBackwardOp op, const ActivationAttrs& attrs, DType dtype, void* out,
                               const StridedOperand& grad, const StridedOperand& saved, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const OutputOperand dense = detail::dense_output(out);
  const StridedOperand inputs[] = {grad, saved};
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case ActivationBackwardOp::ReluBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::ReluBackward{}, inputs);
      case ActivationBackwardOp::SigmoidBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::SigmoidBackward{}, inputs);
      case ActivationBackwardOp::TanhBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::TanhBackward{}, inputs);
      case ActivationBackwardOp::SiluBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::SiluBackward{}, inputs);
      case ActivationBackwardOp::GeluErfBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::GeluErfBackward{}, inputs);
      case ActivationBackwardOp::GeluTanhBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::GeluTanhBackward{}, inputs);
      case ActivationBackwardOp::LeakyReluBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::LeakyReluBackward{attrs.negative_slope}, inputs);
      case ActivationBackwardOp::EluBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::EluBackward{attrs.alpha}, inputs);
      case ActivationBackwardOp::SoftplusBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::SoftplusBackward{attrs.beta, attrs.threshold},
                                                 inputs);
      case ActivationBackwardOp::HardtanhBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::HardtanhBackward{attrs.min_val, attrs.max_val},
                                                 inputs);
      case ActivationBackwardOp::HardswishBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::HardswishBackward{}, inputs);
      case ActivationBackwardOp::HardsigmoidBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::HardsigmoidBackward{}, inputs);
      case ActivationBackwardOp::MishBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::MishBackward{}, inputs);
      case ActivationBackwardOp::LogSigmoidBackward:
        return detail::launch_pointwise<T, T, T>(dense, shape, fn::LogSigmoidBackward{}, inputs);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

}  // namespace ember::cuda
