// CUDA kernels of torch.special's pointwise functions (lgamma, digamma, polygamma, erfinv, i0, i0e,
// i1, i1e, ndtri, log_ndtr, erfcx), in a file of their own: their double-precision bodies are
// long, and instantiating them beside the common math would slow that file's compile. Math:
// kernels/special_functors.h, as on the CPU and in generated kernels.
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/cuda/pointwise_special.h"
#include "kernels/functors.h"

namespace ember::cuda {

namespace {

template <typename T, typename Functor>
int unary(void* out, const LaunchShape& shape, const Functor& functor, const StridedOperand& input) {
  return detail::launch_pointwise<T, T>(detail::dense_output(out), shape, functor, &input);
}

}  // namespace

int launch_special_unary(SpecialUnaryOp op, int64_t order, DType dtype, void* out, const StridedOperand& input,
                         const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case SpecialUnaryOp::Lgamma:
        return unary<T>(out, shape, fn::Lgamma{}, input);
      case SpecialUnaryOp::Digamma:
        return unary<T>(out, shape, fn::Digamma{}, input);
      case SpecialUnaryOp::Polygamma:
        return unary<T>(out, shape, fn::Polygamma{order}, input);
      case SpecialUnaryOp::Erfinv:
        return unary<T>(out, shape, fn::Erfinv{}, input);
      case SpecialUnaryOp::I0:
        return unary<T>(out, shape, fn::I0{}, input);
      case SpecialUnaryOp::I0e:
        return unary<T>(out, shape, fn::I0e{}, input);
      case SpecialUnaryOp::I1:
        return unary<T>(out, shape, fn::I1{}, input);
      case SpecialUnaryOp::I1e:
        return unary<T>(out, shape, fn::I1e{}, input);
      case SpecialUnaryOp::Ndtri:
        return unary<T>(out, shape, fn::Ndtri{}, input);
      case SpecialUnaryOp::LogNdtr:
        return unary<T>(out, shape, fn::LogNdtr{}, input);
      case SpecialUnaryOp::Erfcx:
        return unary<T>(out, shape, fn::Erfcx{}, input);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

}  // namespace ember::cuda
