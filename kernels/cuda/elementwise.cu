// CUDA dtype conversion (clone, to_dtype, copy_, as_dtype) and fills (full, fill_), through the
// shared pointwise launcher of kernels/cuda/pointwise_kernel.cuh. Conversions go through the
// destination's compute type exactly like the CPU's convert_into (e.g. float64 -> float -> bf16).
#include "kernels/cuda/elementwise.h"

#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/functors.h"

namespace ember::cuda {

namespace {

using detail::compute_t;

// value -> the destination's compute type; the launcher then stores it as the destination type.
template <typename OutCompute> struct ConvertTo {
  template <typename Value> __device__ __forceinline__ OutCompute operator()(Value value) const {
    return fn::detail::convert<OutCompute>(value);
  }
};

// Like the CPU's full and fill_: the value becomes the compute type first, then the stored type.
template <typename OutCompute> struct Constant {
  double value;
  __device__ __forceinline__ OutCompute operator()() const { return fn::detail::convert<OutCompute>(value); }
};

}  // namespace

int launch_convert(DType out_dtype, const OutputOperand& out, DType in_dtype, const StridedOperand& input,
                   const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  return detail::dispatch_all(out_dtype, [&](auto out_zero) {
    using Out = decltype(out_zero);
    return detail::dispatch_all(in_dtype, [&](auto in_zero) {
      using In = decltype(in_zero);
      return detail::launch_pointwise<Out, In>(out, shape, ConvertTo<compute_t<Out>>{}, &input);
    });
  });
}

int launch_cast(DType out_dtype, void* out, DType in_dtype, const StridedOperand& input, const LaunchShape& shape) {
  OutputOperand dense;
  dense.data = out;
  return launch_convert(out_dtype, dense, in_dtype, input, shape);
}

int launch_fill_strided(DType dtype, const OutputOperand& out, double value, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    return detail::launch_pointwise<T>(out, shape, Constant<compute_t<T>>{value}, nullptr);
  });
}

int launch_fill(DType dtype, void* out, double value, const LaunchShape& shape) {
  OutputOperand dense;
  dense.data = out;
  return launch_fill_strided(dtype, dense, value, shape);
}

}  // namespace ember::cuda
