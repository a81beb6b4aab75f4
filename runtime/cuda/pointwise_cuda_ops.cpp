// CUDA kernels of the pointwise registry ops beyond plain arithmetic: unary math, host-scalar ops,
// activations and their backward ops, maximum / minimum / pow, comparisons, value tests, logical
// ops and where. Each
// converts its inputs to the dtype the op computes in exactly like the CPU kernel
// (kernels/cpu/pointwise_kernels.h) and launches one kernel of kernels/cuda/pointwise.h.
#include <limits>

#include "kernels/cuda/pointwise.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/dtype.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

double value_of(const OpCall& call) { return call.attrs.get<double>("value"); }

template <NumericUnaryOp op>
void numeric_unary_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor input = as_dtype(call.input(0), out.dtype());
  constexpr double infinity = std::numeric_limits<double>::infinity();
  UnaryAttrs attrs;
  if (op == NumericUnaryOp::PowScalar || op == NumericUnaryOp::RsubScalar) attrs.value = value_of(call);
  if (op == NumericUnaryOp::Clamp) {
    attrs.min = call.attrs.get_or<double>("min", -infinity);
    attrs.max = call.attrs.get_or<double>("max", infinity);
  }
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_numeric_unary(op, attrs, out.dtype(), out.raw_data_ptr(), operand_of(input, shape), shape));
}

template <FloatUnaryOp op>
void float_unary_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor input = as_dtype(call.input(0), out.dtype());
  const double value = (op == FloatUnaryOp::DivScalar || op == FloatUnaryOp::RdivScalar) ? value_of(call) : 0.0;
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_float_unary(op, value, out.dtype(), out.raw_data_ptr(), operand_of(input, shape), shape));
}

// The attributes the op has (leaky_relu's negative_slope, elu's alpha, softplus' beta and
// threshold, hardtanh's min_val and max_val, and their backward ops'); the others have none of
// these names.
ActivationAttrs activation_attrs(const Attrs& attrs) {
  return ActivationAttrs{.negative_slope = attrs.get_or<double>("negative_slope", 0.0),
                         .alpha = attrs.get_or<double>("alpha", 0.0),
                         .beta = attrs.get_or<double>("beta", 0.0),
                         .threshold = attrs.get_or<double>("threshold", 0.0),
                         .min_val = attrs.get_or<double>("min_val", 0.0),
                         .max_val = attrs.get_or<double>("max_val", 0.0)};
}

void activation_into(ActivationOp op, const OpCall& call, const Tensor& out) {
  DeviceGuard guard(out.device());
  const Tensor input = as_dtype(call.input(0), out.dtype());
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_activation(op, activation_attrs(call.attrs), out.dtype(), out.raw_data_ptr(),
                                   operand_of(input, shape), shape));
}

template <ActivationOp op>
void activation_cuda(const OpCall& call, TensorList& outputs) {
  activation_into(op, call, outputs[0]);
}

void gelu_cuda(const OpCall& call, TensorList& outputs) {
  activation_into(call.attrs.get<bool>("tanh") ? ActivationOp::GeluTanh : ActivationOp::GeluErf, call, outputs[0]);
}

void activation_backward_into(ActivationBackwardOp op, const OpCall& call, const Tensor& out) {
  DeviceGuard guard(out.device());
  const Tensor grad = as_dtype(call.input(0), out.dtype());
  const Tensor saved = as_dtype(call.input(1), out.dtype());
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_activation_backward(op, activation_attrs(call.attrs), out.dtype(), out.raw_data_ptr(),
                                            operand_of(grad, shape), operand_of(saved, shape), shape));
}

template <ActivationBackwardOp op>
void activation_backward_cuda(const OpCall& call, TensorList& outputs) {
  activation_backward_into(op, call, outputs[0]);
}

void gelu_backward_cuda(const OpCall& call, TensorList& outputs) {
  const bool tanh = call.attrs.get<bool>("tanh");
  activation_backward_into(tanh ? ActivationBackwardOp::GeluTanhBackward : ActivationBackwardOp::GeluErfBackward,
                           call, outputs[0]);
}

// maximum, minimum, pow: both inputs in the output's dtype.
template <BinaryOp op>
void binary_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor a = as_dtype(call.input(0), out.dtype());
  const Tensor b = as_dtype(call.input(1), out.dtype());
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_binary(op, 1.0, out.dtype(), out.raw_data_ptr(), operand_of(a, shape), operand_of(b, shape), shape));
}

// Comparisons run in the inputs' result_type (a 0-d input counts less); the output is bool.
template <CompareOp op>
void compare_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor& left = call.input(0);
  const Tensor& right = call.input(1);
  const DType common = result_type(left.dtype(), left.dim() == 0, right.dtype(), right.dim() == 0);
  const Tensor a = as_dtype(left, common);
  const Tensor b = as_dtype(right, common);
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_compare(op, common, out.raw_data_ptr(), operand_of(a, shape), operand_of(b, shape), shape));
}

// isnan, isinf, isfinite, logical_not: the input in its own dtype, a bool output.
template <PredicateOp op>
void predicate_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor& input = call.input(0);
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_predicate(op, input.dtype(), out.raw_data_ptr(), operand_of(input, shape), shape));
}

void where_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor& condition = call.input(0);
  const Tensor a = as_dtype(call.input(1), out.dtype());
  const Tensor b = as_dtype(call.input(2), out.dtype());
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_where(out.dtype(), out.raw_data_ptr(), operand_of(condition, shape), operand_of(a, shape),
                              operand_of(b, shape), shape));
}

void register_pointwise_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("neg", kCuda, numeric_unary_cuda<NumericUnaryOp::Neg>);
  registry.set_kernel("abs", kCuda, numeric_unary_cuda<NumericUnaryOp::Abs>);
  registry.set_kernel("sign", kCuda, numeric_unary_cuda<NumericUnaryOp::Sign>);
  registry.set_kernel("relu", kCuda, numeric_unary_cuda<NumericUnaryOp::Relu>);
  registry.set_kernel("clamp", kCuda, numeric_unary_cuda<NumericUnaryOp::Clamp>);
  registry.set_kernel("pow_scalar", kCuda, numeric_unary_cuda<NumericUnaryOp::PowScalar>);
  registry.set_kernel("rsub_scalar", kCuda, numeric_unary_cuda<NumericUnaryOp::RsubScalar>);
  registry.set_kernel("floor", kCuda, numeric_unary_cuda<NumericUnaryOp::Floor>);
  registry.set_kernel("ceil", kCuda, numeric_unary_cuda<NumericUnaryOp::Ceil>);
  registry.set_kernel("round", kCuda, numeric_unary_cuda<NumericUnaryOp::Round>);
  registry.set_kernel("trunc", kCuda, numeric_unary_cuda<NumericUnaryOp::Trunc>);
  registry.set_kernel("exp", kCuda, float_unary_cuda<FloatUnaryOp::Exp>);
  registry.set_kernel("expm1", kCuda, float_unary_cuda<FloatUnaryOp::Expm1>);
  registry.set_kernel("erf", kCuda, float_unary_cuda<FloatUnaryOp::Erf>);
  registry.set_kernel("sin", kCuda, float_unary_cuda<FloatUnaryOp::Sin>);
  registry.set_kernel("cos", kCuda, float_unary_cuda<FloatUnaryOp::Cos>);
  registry.set_kernel("log", kCuda, float_unary_cuda<FloatUnaryOp::Log>);
  registry.set_kernel("log1p", kCuda, float_unary_cuda<FloatUnaryOp::Log1p>);
  registry.set_kernel("sqrt", kCuda, float_unary_cuda<FloatUnaryOp::Sqrt>);
  registry.set_kernel("rsqrt", kCuda, float_unary_cuda<FloatUnaryOp::Rsqrt>);
  registry.set_kernel("reciprocal", kCuda, float_unary_cuda<FloatUnaryOp::Reciprocal>);
  registry.set_kernel("div_scalar", kCuda, float_unary_cuda<FloatUnaryOp::DivScalar>);
  registry.set_kernel("rdiv_scalar", kCuda, float_unary_cuda<FloatUnaryOp::RdivScalar>);
  registry.set_kernel("sigmoid", kCuda, activation_cuda<ActivationOp::Sigmoid>);
  registry.set_kernel("tanh", kCuda, activation_cuda<ActivationOp::Tanh>);
  registry.set_kernel("silu", kCuda, activation_cuda<ActivationOp::Silu>);
  registry.set_kernel("gelu", kCuda, gelu_cuda);
  registry.set_kernel("leaky_relu", kCuda, activation_cuda<ActivationOp::LeakyRelu>);
  registry.set_kernel("elu", kCuda, activation_cuda<ActivationOp::Elu>);
  registry.set_kernel("softplus", kCuda, activation_cuda<ActivationOp::Softplus>);
  registry.set_kernel("relu_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::ReluBackward>);
  registry.set_kernel("sigmoid_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::SigmoidBackward>);
  registry.set_kernel("tanh_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::TanhBackward>);
  registry.set_kernel("silu_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::SiluBackward>);
  registry.set_kernel("gelu_backward", kCuda, gelu_backward_cuda);
  registry.set_kernel("leaky_relu_backward", kCuda,
                      activation_backward_cuda<ActivationBackwardOp::LeakyReluBackward>);
  registry.set_kernel("elu_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::EluBackward>);
  registry.set_kernel("softplus_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::SoftplusBackward>);
  registry.set_kernel("hardtanh", kCuda, activation_cuda<ActivationOp::Hardtanh>);
  registry.set_kernel("hardswish", kCuda, activation_cuda<ActivationOp::Hardswish>);
  registry.set_kernel("hardsigmoid", kCuda, activation_cuda<ActivationOp::Hardsigmoid>);
  registry.set_kernel("mish", kCuda, activation_cuda<ActivationOp::Mish>);
  registry.set_kernel("log_sigmoid", kCuda, activation_cuda<ActivationOp::LogSigmoid>);
  registry.set_kernel("hardtanh_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::HardtanhBackward>);
  registry.set_kernel("hardswish_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::HardswishBackward>);
  registry.set_kernel("hardsigmoid_backward", kCuda,
                      activation_backward_cuda<ActivationBackwardOp::HardsigmoidBackward>);
  registry.set_kernel("mish_backward", kCuda, activation_backward_cuda<ActivationBackwardOp::MishBackward>);
  registry.set_kernel("log_sigmoid_backward", kCuda,
                      activation_backward_cuda<ActivationBackwardOp::LogSigmoidBackward>);
  registry.set_kernel("maximum", kCuda, binary_cuda<BinaryOp::Maximum>);
  registry.set_kernel("minimum", kCuda, binary_cuda<BinaryOp::Minimum>);
  registry.set_kernel("pow", kCuda, binary_cuda<BinaryOp::Pow>);
  registry.set_kernel("eq", kCuda, compare_cuda<CompareOp::Eq>);
  registry.set_kernel("ne", kCuda, compare_cuda<CompareOp::Ne>);
  registry.set_kernel("lt", kCuda, compare_cuda<CompareOp::Lt>);
  registry.set_kernel("le", kCuda, compare_cuda<CompareOp::Le>);
  registry.set_kernel("gt", kCuda, compare_cuda<CompareOp::Gt>);
  registry.set_kernel("ge", kCuda, compare_cuda<CompareOp::Ge>);
  registry.set_kernel("logical_and", kCuda, compare_cuda<CompareOp::LogicalAnd>);
  registry.set_kernel("logical_or", kCuda, compare_cuda<CompareOp::LogicalOr>);
  registry.set_kernel("logical_xor", kCuda, compare_cuda<CompareOp::LogicalXor>);
  registry.set_kernel("isnan", kCuda, predicate_cuda<PredicateOp::IsNan>);
  registry.set_kernel("isinf", kCuda, predicate_cuda<PredicateOp::IsInf>);
  registry.set_kernel("isfinite", kCuda, predicate_cuda<PredicateOp::IsFinite>);
  registry.set_kernel("logical_not", kCuda, predicate_cuda<PredicateOp::LogicalNot>);
  registry.set_kernel("where", kCuda, where_cuda);
}

const OpRegistration registration(register_pointwise_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
