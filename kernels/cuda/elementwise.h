// Host-side entry points of the CUDA elementwise kernels (kernels/cuda/elementwise.cu). Plain C++
// with no CUDA header: the op files in runtime/cuda describe tensors as raw pointers plus
// broadcast strides, and the .cu file turns a dtype and an op into one template instantiation.
#pragma once

#include <cstdint>

namespace ember {
// Declared, not included: runtime/dtype.h brings fmt, which nvcc cannot compile.
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda {

constexpr int kMaxDims = 8;

// The output's shape (contiguous, row-major) and the stream to launch on.
struct LaunchShape {
  int dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t numel = 0;
  void* stream = nullptr;  // cudaStream_t
};

// One input aligned to the output's shape: stride 0 on broadcast dims, in elements, and `data`
// already advanced by the storage offset. `contiguous` enables the flat-index fast path.
struct StridedOperand {
  const void* data = nullptr;
  int64_t strides[kMaxDims] = {};
  bool contiguous = false;
};

// Where a pointwise kernel writes: a dense buffer (contiguous) or, for in-place ops on views,
// the target's own strides over the output's shape, in elements.
struct OutputOperand {
  void* data = nullptr;
  int64_t strides[kMaxDims] = {};
  bool contiguous = true;
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Maximum, Minimum, Pow };
enum class ScalarOp : uint8_t { AddScalar, MulScalar };

// Each launcher returns the launch's cudaError_t as an int (0 on success) for cuda_check.
// out[i] = static_cast<out_dtype>(input[i]), through float for 16-bit types.
int launch_cast(DType out_dtype, void* out, DType in_dtype, const StridedOperand& input,
                 const LaunchShape& shape);
// out[i] = op(a[i], b[i]) with a, b and out all in `dtype` (the op file converts first).
int launch_binary(BinaryOp op, double alpha, DType dtype, void* out, const StridedOperand& a,
                   const StridedOperand& b, const LaunchShape& shape);
// out[i] = op(input[i], value) with input and out in `dtype`.
int launch_scalar(ScalarOp op, double value, DType dtype, void* out, const StridedOperand& input,
                  const LaunchShape& shape);
// out[i] = value for a contiguous buffer of `numel` elements.
int launch_fill(DType dtype, void* out, double value, const LaunchShape& shape);

// The same into any output (copy_ and fill_ write through a view's strides).
int launch_convert(DType out_dtype, const OutputOperand& out, DType in_dtype, const StridedOperand& input,
                   const LaunchShape& shape);
int launch_fill_strided(DType dtype, const OutputOperand& out, double value, const LaunchShape& shape);
// launch_binary / launch_scalar into any output (add_, mul_, mul_scalar_ on views). Maximum,
// Minimum and Pow take every dtype launch_binary does; Pow rejects bool.
int launch_binary_into(BinaryOp op, double alpha, DType dtype, const OutputOperand& out, const StridedOperand& a,
                       const StridedOperand& b, const LaunchShape& shape);
// launch_binary_into for add_ and mul_ (Add, Mul) whose operands promote past the target's dtype:
// `a` (the target) is read in `dtype`, `b` in `compute`, the op runs in `compute` and the result is
// rounded once into the target (float16 += float32, float32 *= float64, int32 += int64).
int launch_binary_into_promoted(BinaryOp op, double alpha, DType dtype, DType compute, const OutputOperand& out,
                                const StridedOperand& a, const StridedOperand& b, const LaunchShape& shape);
int launch_scalar_into(ScalarOp op, double value, DType dtype, const OutputOperand& out,
                       const StridedOperand& input, const LaunchShape& shape);

}  // namespace ember::cuda
