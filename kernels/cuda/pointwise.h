// Host-side entry points of the CUDA pointwise kernels beyond plain arithmetic (see elementwise.h
// for the shared LaunchShape / StridedOperand / OutputOperand): unary math, host-scalar ops,
// activations and their backward ops, comparisons, value tests, logical ops and where. Plain C++, no CUDA header.
// Each launcher returns the launch's cudaError_t as an int (0 on success); dtypes an op does not
// support return cudaErrorInvalidValue (op files check dtypes first, like the CPU ops).
#pragma once

#include "kernels/cuda/elementwise.h"

namespace ember::cuda {

// Ops on any dtype but bool (Sign and AddScalar / MulScalar also on bool), in the output's dtype.
enum class NumericUnaryOp : uint8_t { Neg, Abs, Sign, Relu, Clamp, PowScalar, RsubScalar, Floor, Ceil, Round, Trunc };
// Floating-only ops (float32, float64, bfloat16, float16).
enum class FloatUnaryOp : uint8_t {
  Exp, Log, Log1p, Sqrt, Rsqrt, Reciprocal, DivScalar, RdivScalar, Expm1, Erf, Sin, Cos
};
// The less common math (pointwise_math.cu): floating only, like FloatUnaryOp.
enum class MathUnaryOp : uint8_t { Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Log2, Log10, Exp2, Erfc };
// Atan2 floating only; Fmod and Remainder any dtype but bool (an integer zero divisor is refused
// by the op before the launch).
enum class MathBinaryOp : uint8_t { Atan2, Fmod, Remainder };
enum class ActivationOp : uint8_t {
  Sigmoid, Tanh, Silu, GeluErf, GeluTanh, LeakyRelu, Elu, Softplus, Hardtanh, Hardswish, Hardsigmoid, Mish, LogSigmoid
};
// (grad, saved) -> grad_input, floating only.
enum class ActivationBackwardOp : uint8_t {
  ReluBackward, SigmoidBackward, TanhBackward, SiluBackward, GeluErfBackward, GeluTanhBackward,
  LeakyReluBackward, EluBackward, SoftplusBackward, HardtanhBackward, HardswishBackward, HardsigmoidBackward,
  MishBackward, LogSigmoidBackward
};
// The attributes of the parametrized activations and their backward ops (the others ignore them).
struct ActivationAttrs {
  double negative_slope = 0.0;  // leaky_relu
  double alpha = 0.0;           // elu
  double beta = 0.0;            // softplus
  double threshold = 0.0;       // softplus
  double min_val = 0.0;         // hardtanh
  double max_val = 0.0;         // hardtanh
};
// Comparisons and the binary logical ops: bool results of two inputs in one dtype.
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor };
// Bool results of one input of any dtype.
enum class PredicateOp : uint8_t { IsNan, IsInf, IsFinite, LogicalNot };

// The attributes a unary op may take: `value` (scalar ops), `min` / `max` (clamp; infinite when
// absent).
struct UnaryAttrs {
  double value = 0.0;
  double min = 0.0;
  double max = 0.0;
};

// out = op(input) with input and out in `dtype`.
int launch_numeric_unary(NumericUnaryOp op, const UnaryAttrs& attrs, DType dtype, void* out,
                         const StridedOperand& input, const LaunchShape& shape);
int launch_float_unary(FloatUnaryOp op, double value, DType dtype, void* out, const StridedOperand& input,
                       const LaunchShape& shape);
int launch_math_unary(MathUnaryOp op, DType dtype, void* out, const StridedOperand& input, const LaunchShape& shape);
// out = op(a, b) with a, b and out in `dtype`.
int launch_math_binary(MathBinaryOp op, DType dtype, void* out, const StridedOperand& a, const StridedOperand& b,
                       const LaunchShape& shape);
int launch_activation(ActivationOp op, const ActivationAttrs& attrs, DType dtype, void* out,
                      const StridedOperand& input, const LaunchShape& shape);
int launch_activation_backward(ActivationBackwardOp op, const ActivationAttrs& attrs, DType dtype, void* out,
                               const StridedOperand& grad, const StridedOperand& saved, const LaunchShape& shape);
// out (bool) = op(a, b) with a and b in `dtype`.
int launch_compare(CompareOp op, DType dtype, void* out, const StridedOperand& a, const StridedOperand& b,
                   const LaunchShape& shape);
// out (bool) = op(input) with input in `dtype`.
int launch_predicate(PredicateOp op, DType dtype, void* out, const StridedOperand& input, const LaunchShape& shape);
// out = condition ? a : b with a, b and out in `dtype`, condition bool.
int launch_where(DType dtype, void* out, const StridedOperand& condition, const StridedOperand& a,
                 const StridedOperand& b, const LaunchShape& shape);

}  // namespace ember::cuda
