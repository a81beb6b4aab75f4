// The CUDA elementwise kernel: one template that maps a functor from kernels/functors.h over a
// contiguous output and strided/broadcast inputs, computing 16-bit floats in fp32 like the CPU.
// Each op and dtype is one instantiation, chosen on the host by dispatch_dtype.
#include "kernels/cuda/elementwise.h"

#include <cuda_runtime_api.h>

#include "kernels/functors.h"
#include "kernels/half_types.h"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

// runtime/dtype.h's dispatch_dtype and compute_t, restated because that header brings fmt, which
// nvcc cannot compile. The case order follows enum class DType.
template <typename T> struct Compute { using type = T; };
template <> struct Compute<BFloat16> { using type = float; };
template <> struct Compute<Float16> { using type = float; };
template <typename T> using compute_t = typename Compute<T>::type;

template <typename Fn> void dispatch_dtype(DType dtype, Fn&& fn) {
  switch (static_cast<int>(dtype)) {
    case 0: return fn(float{});
    case 1: return fn(double{});
    case 2: return fn(BFloat16{});
    case 3: return fn(Float16{});
    case 4: return fn(int32_t{});
    case 5: return fn(int64_t{});
    default: return fn(bool{});
  }
}

// Element offset of `input` for the output's linear index (row-major over shape's sizes).
__device__ __forceinline__ int64_t input_offset(int64_t linear, const LaunchShape& shape,
                                                const StridedOperand& input) {
  if (input.contiguous) return linear;
  int64_t offset = 0;
  for (int dim = shape.dims - 1; dim >= 0; --dim) {
    const int64_t size = shape.sizes[dim];
    offset += (linear % size) * input.strides[dim];
    linear /= size;
  }
  return offset;
}

template <typename T> __device__ __forceinline__ compute_t<T> load(const StridedOperand& input, int64_t offset) {
  return static_cast<compute_t<T>>(static_cast<const T*>(input.data)[offset]);
}

template <typename Out, typename In, typename Functor>
__global__ void unary_kernel(Out* out, StridedOperand input, LaunchShape shape, Functor functor) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < shape.numel; i += stride)
    out[i] = static_cast<Out>(functor(load<In>(input, input_offset(i, shape, input))));
}

template <typename T, typename Functor>
__global__ void binary_kernel(T* out, StridedOperand a, StridedOperand b, LaunchShape shape, Functor functor) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < shape.numel; i += stride)
    out[i] = static_cast<T>(functor(load<T>(a, input_offset(i, shape, a)), load<T>(b, input_offset(i, shape, b))));
}

// Grid-stride launch: enough blocks to fill the GPU, capped so huge tensors loop instead.
unsigned blocks_for(int64_t numel) {
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

struct Identity {
  template <typename T> __device__ __forceinline__ T operator()(T a) const { return a; }
};

struct Constant {
  double value;
  template <typename T> __device__ __forceinline__ double operator()(T) const { return value; }
};

// The launch's status, so the op that launched is the one the error names.
int check_launch() { return static_cast<int>(cudaGetLastError()); }

}  // namespace

int launch_cast(DType out_dtype, void* out, DType in_dtype, const StridedOperand& input,
                 const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(shape.stream);
  dispatch_dtype(out_dtype, [&](auto out_zero) {
    using Out = decltype(out_zero);
    dispatch_dtype(in_dtype, [&](auto in_zero) {
      using In = decltype(in_zero);
      unary_kernel<Out, In><<<blocks_for(shape.numel), kThreads, 0, stream>>>(
          static_cast<Out*>(out), input, shape, Identity{});
    });
  });
  return check_launch();
}

int launch_fill(DType dtype, void* out, double value, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  StridedOperand none;
  none.contiguous = true;
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    unary_kernel<T, T><<<blocks_for(shape.numel), kThreads, 0, static_cast<cudaStream_t>(shape.stream)>>>(
        static_cast<T*>(out), none, shape, Constant{value});
  });
  return check_launch();
}

int launch_binary(BinaryOp op, double alpha, DType dtype, void* out, const StridedOperand& a,
                   const StridedOperand& b, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(shape.stream);
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* typed_out = static_cast<T*>(out);
    const unsigned blocks = blocks_for(shape.numel);
    switch (op) {
      case BinaryOp::Add: binary_kernel<<<blocks, kThreads, 0, stream>>>(typed_out, a, b, shape, fn::Add{alpha}); break;
      case BinaryOp::Sub: binary_kernel<<<blocks, kThreads, 0, stream>>>(typed_out, a, b, shape, fn::Sub{alpha}); break;
      case BinaryOp::Mul: binary_kernel<<<blocks, kThreads, 0, stream>>>(typed_out, a, b, shape, fn::Mul{}); break;
      case BinaryOp::Div: binary_kernel<<<blocks, kThreads, 0, stream>>>(typed_out, a, b, shape, fn::Div{}); break;
    }
  });
  return check_launch();
}

int launch_scalar(ScalarOp op, double value, DType dtype, void* out, const StridedOperand& input,
                  const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(shape.stream);
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* typed_out = static_cast<T*>(out);
    const unsigned blocks = blocks_for(shape.numel);
    if (op == ScalarOp::AddScalar) {
      unary_kernel<T, T><<<blocks, kThreads, 0, stream>>>(typed_out, input, shape, fn::AddScalar{value});
    } else {
      unary_kernel<T, T><<<blocks, kThreads, 0, stream>>>(typed_out, input, shape, fn::MulScalar{value});
    }
  });
  return check_launch();
}

}  // namespace ember::cuda
