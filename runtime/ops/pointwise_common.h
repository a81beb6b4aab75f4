// Shape rules and OpDef helpers shared by the pointwise op files.
#pragma once

#include <string_view>

#include "runtime/ops/registry.h"

namespace ember::ops {

// Broadcast shape of inputs 0 and 1, promoted dtype.
void binary_shape(const OpCall& call, OutputMetas& outputs);
// Broadcast shape, bool dtype (comparisons).
void compare_shape(const OpCall& call, OutputMetas& outputs);
// Input 0's shape and dtype.
void unary_shape(const OpCall& call, OutputMetas& outputs);
// Input 0's shape; floating dtype (integers become float32, like torch.exp on ints).
void unary_float_shape(const OpCall& call, OutputMetas& outputs);
// Broadcast shape, promoted dtype made floating (true division: int / int is float32).
void binary_float_shape(const OpCall& call, OutputMetas& outputs);

// PyTorch's dtype for `tensor op scalar`: a floating tensor keeps its dtype; an integer or bool
// tensor becomes float32 when the scalar is not integral; a bool tensor with an integral scalar
// becomes int64. An integral scalar outside the range of an integer result is an error unless
// the op saturates it (clamp bounds).
DType scalar_result_dtype(std::string_view op, DType tensor, double value, bool saturates = false);
// Input 0's shape, scalar_result_dtype with attr "value".
void scalar_shape(const OpCall& call, OutputMetas& outputs);
// Input 0's shape, floating dtype (true division by or of a scalar).
void scalar_float_shape(const OpCall& call, OutputMetas& outputs);

// In-place binary ops: `b` must broadcast to `a`'s shape.
void check_inplace_broadcast(const OpCall& call);
// In-place ops: the result dtype must be storable in the target without losing its kind
// (float into an integer tensor, or a number into a bool tensor, is an error like PyTorch).
void check_inplace_dtype(const OpCall& call, DType result);
// add/sub's alpha on integer tensors (`result` int32 or int64) must be an integer of that type,
// as PyTorch requires: a fraction would be truncated silently, a NaN or out-of-range value is
// undefined behaviour to convert.
void check_integer_alpha(const OpCall& call, DType result);
// A host value stored into a tensor of `dtype` (full, fill_, linspace's ends): for int32 and int64
// it must be finite and, truncated toward zero, within the dtype's range, as PyTorch requires; a
// NaN or out-of-range value would otherwise be stored as 0 or saturated, silently. For a floating
// dtype a finite value must not pass its largest finite value (it would become inf).
void check_value_fits(std::string_view op, double value, DType dtype);

// fmod and remainder with an integer result: a zero divisor (input 1) is an error, as in PyTorch's
// CPU kernels, instead of C's undefined integer % 0. fail_... raises it; check_... reads the
// divisor in `result` through dispatched ops (a reduction and, on CUDA, a synchronization), for
// the CUDA kernels outside a capture only.
[[noreturn]] void fail_integer_division_by_zero(const OpCall& call, DType result);
void check_integer_divisor(const OpCall& call, DType result);

// ---- for backward rules ----
// A 0-d tensor holding `value` rounded to `like`'s dtype (inf past a floating dtype's range), with its
// device (broadcasts in where/compare).
Tensor scalar_like(double value, const Tensor& like);
// `grad` (of the broadcast output's shape) summed back to input i's shape.
Tensor reduce_grad(const BackwardContext& ctx, int i, const Tensor& grad);

// A pointwise OpDef with its CPU kernel, backward rule and functor name filled in.
OpDef pointwise_op(const char* name, const char* schema, ShapeRule infer, Kernel cpu_kernel,
                   BackwardRule backward, uint32_t save_inputs, uint32_t save_outputs,
                   const char* functor);

}  // namespace ember::ops
