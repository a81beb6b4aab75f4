// Shape rules shared by pointwise ops.
#include "runtime/ops/pointwise_common.h"

#include <cmath>
#include <limits>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::ops {

void binary_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  outputs[0].sizes = broadcast_shapes(a.sizes(), b.sizes(), call.op.name);
  outputs[0].dtype = result_type(a.dtype(), a.dim() == 0, b.dtype(), b.dim() == 0);
}

void compare_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = broadcast_shapes(call.input(0).sizes(), call.input(1).sizes(), call.op.name);
  outputs[0].dtype = kBool;
}

void unary_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = call.input(0).dtype();
}

void unary_float_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = is_floating(call.input(0).dtype()) ? call.input(0).dtype() : kFloat32;
}

void binary_float_shape(const OpCall& call, OutputMetas& outputs) {
  binary_shape(call, outputs);
  if (!is_floating(outputs[0].dtype)) outputs[0].dtype = kFloat32;
}

namespace {

// Whether the integral `whole` is a value of `dtype` (int32 or int64). 2^31 and 2^63 are exact
// doubles: the integral values below them fit the integer type.
bool in_integer_range(double whole, DType dtype) {
  const double limit = dtype == kInt32 ? 2147483648.0 : 9223372036854775808.0;
  return whole >= -limit && whole < limit;
}

}  // namespace

DType scalar_result_dtype(std::string_view op, DType tensor, double value, bool saturates) {
  if (is_floating(tensor)) return tensor;
  if (!std::isfinite(value) || value != std::floor(value)) return kFloat32;
  const DType result = tensor == kBool ? kInt64 : tensor;
  check(saturates || in_integer_range(value, result), "{}: scalar {} is out of range for a {} result", op, value,
        result);
  return result;
}

void scalar_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = scalar_result_dtype(call.op.name, call.input(0).dtype(), call.attrs.get<double>("value"));
}

void scalar_float_shape(const OpCall& call, OutputMetas& outputs) { unary_float_shape(call, outputs); }

void check_inplace_broadcast(const OpCall& call) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  check(broadcast_shapes(a.sizes(), b.sizes(), call.op.name) == a.sizes(),
        "{}: the other tensor of shape {} does not broadcast to the in-place target's shape {}",
        call.op.name, b.sizes(), a.sizes());
}

void check_integer_alpha(const OpCall& call, DType result) {
  if (result != kInt32 && result != kInt64 && result != kBool) return;
  const double alpha = call.attrs.get<double>("alpha");
  const bool whole = std::isfinite(alpha) && alpha == std::floor(alpha);
  // bool counts as integral here, as in PyTorch's alpha check: a fractional alpha means nothing.
  if (result == kBool) {
    check(whole, "{}: alpha must be an integer for bool tensors, got {}", call.op.name, alpha);
    return;
  }
  check(whole && in_integer_range(alpha, result),
        "{}: alpha must be an integer within {}'s range for {} tensors, got {}", call.op.name, result, result, alpha);
}

namespace {

// The largest finite value of a floating dtype.
double largest_finite(DType dtype) {
  switch (dtype) {
    case kFloat16: return 65504.0;
    case kBFloat16: return 0x1.fep+127;
    case kFloat32: return static_cast<double>(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}

}  // namespace

void check_value_fits(std::string_view op, double value, DType dtype) {
  if (is_floating(dtype)) {
    // PyTorch's checked_convert: infinities and NaN are values of the type, a finite value past
    // its largest would silently become inf (masked_fill(-1e9) in float16 is the classic).
    check(!std::isfinite(value) || std::fabs(value) <= largest_finite(dtype),
          "{}: value {} cannot be stored in a {} tensor without overflow (its largest finite value is {})", op,
          value, dtype, largest_finite(dtype));
    return;
  }
  if (dtype != kInt32 && dtype != kInt64) return;
  check(std::isfinite(value) && in_integer_range(std::trunc(value), dtype),
        "{}: value {} cannot be stored in an {} tensor", op, value, dtype);
}

void check_inplace_dtype(const OpCall& call, DType result) {
  const DType target = call.input(0).dtype();
  const bool loses_kind = (is_floating(result) && !is_floating(target)) || (target == kBool && result != kBool);
  check(!loses_kind, "{}: the result type {} cannot be stored in the in-place target of type {} (shape {})",
        call.op.name, result, target, call.input(0).sizes());
}

namespace {

// `value` as a tensor of `dtype` stores it: a floating dtype rounds it (through float for the 16-bit
// ones, as every kernel converts), to inf past its range.
double stored_value(double value, DType dtype) {
  if (!is_floating(dtype)) return value;
  return dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(static_cast<compute_t<T>>(T(static_cast<compute_t<T>>(value))));
  });
}

}  // namespace

// Rounded first: an internal constant beside a 16-bit tensor (clamp's bound -1e6 in its backward)
// is the inf it becomes, not a user's fill value out of the dtype's range.
Tensor scalar_like(double value, const Tensor& like) {
  return scalar_tensor(stored_value(value, like.dtype()), {.dtype = like.dtype(), .device = like.device()});
}

void fail_integer_division_by_zero(const OpCall& call, DType result) {
  const Tensor& divisor = call.input(1);
  fail("{}: integer division by zero (the divisor of shape {}, read as {}, holds a 0; a floating divisor "
       "gives NaN instead)",
       call.op.name, divisor.sizes(), result);
}

void check_integer_divisor(const OpCall& call, DType result) {
  if (is_floating(result)) return;
  NoGradGuard no_grad;
  const Tensor divisor = to_dtype(call.input(1), result);
  if (any(eq(divisor, scalar_like(0.0, divisor))).item<bool>()) fail_integer_division_by_zero(call, result);
}

Tensor reduce_grad(const BackwardContext& ctx, int i, const Tensor& grad) {
  return sum_to_size(grad, ctx.input_metas[i].sizes);
}

OpDef pointwise_op(const char* name, const char* schema, ShapeRule infer, Kernel cpu_kernel,
                   BackwardRule backward, uint32_t save_inputs, uint32_t save_outputs,
                   const char* functor) {
  OpDef def = make_op(name, schema, OpKind::Pointwise, infer, cpu_kernel, backward);
  def.save_inputs = save_inputs;
  def.save_outputs = save_outputs;
  def.functor = functor;
  return def;
}

}  // namespace ember::ops
