// Reductions: sum, mean, amax, amin, prod, any, all, var (attrs dims, keepdim[, correction]) and
// argmax, argmin (attrs dim optional, keepdim), plus extremum_backward, the gradient of amax/amin. Kernels in
// kernels/cpu/reduce_kernels.h; the combine math in kernels/reduce_functors.h.
#include <limits>

#include "kernels/cpu/reduce_geometry.h"
#include "kernels/cpu/reduce_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/backward_op_rules.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/registry.h"

namespace ember::ops {

namespace {

uint32_t mask_of(const OpCall& call) {
  return cpu::reduce_mask(call.attrs.get<Dims>("dims"), call.input(0).dim(), call.op.name);
}

void set_reduced_shape(const OpCall& call, OutputMetas& outputs, uint32_t mask) {
  outputs[0].sizes = cpu::reduced_sizes(call.input(0).sizes(), mask, call.attrs.get<bool>("keepdim"));
}

// Integers and bool sum (and multiply) to int64 (no overflow surprises), like PyTorch.
void sum_shape(const OpCall& call, OutputMetas& outputs) {
  set_reduced_shape(call, outputs, mask_of(call));
  const DType dtype = call.input(0).dtype();
  outputs[0].dtype = is_floating(dtype) ? dtype : kInt64;
}

// any and all read every dtype (nonzero is true) and give bool, like PyTorch's.
void logical_reduce_shape(const OpCall& call, OutputMetas& outputs) {
  set_reduced_shape(call, outputs, mask_of(call));
  outputs[0].dtype = kBool;
}

// mean and var of integers are errors in PyTorch too: the result would need a float dtype.
void floating_reduce_shape(const OpCall& call, OutputMetas& outputs) {
  const DType dtype = call.input(0).dtype();
  check(is_floating(dtype), "{}: expected a floating-point input, got {} (convert with to_dtype first)",
        call.op.name, dtype_name(dtype));
  set_reduced_shape(call, outputs, mask_of(call));
  outputs[0].dtype = dtype;
}

void extremum_shape(const OpCall& call, OutputMetas& outputs) {
  const uint32_t mask = mask_of(call);
  cpu::check_nonempty_reduction(call.input(0).sizes(), mask, call.op.name);
  set_reduced_shape(call, outputs, mask);
  outputs[0].dtype = call.input(0).dtype();
}

void arg_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  const bool keepdim = call.attrs.get<bool>("keepdim");
  uint32_t mask = input.dim() == 0 ? 0u : (1u << input.dim()) - 1u;
  if (call.attrs.has("dim")) {
    const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
    mask = input.dim() == 0 ? 0u : 1u << dim;
  }
  cpu::check_nonempty_reduction(input.sizes(), mask, call.op.name);
  outputs[0].sizes = cpu::reduced_sizes(input.sizes(), mask, keepdim);
  outputs[0].dtype = kInt64;
}

void extremum_backward_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(1);
  check(call.input(0).dtype() == input.dtype() && call.input(2).dtype() == input.dtype(),
        "extremum_backward: grad ({}), input ({}) and result ({}) must share a dtype",
        call.input(0).dtype(), input.dtype(), call.input(2).dtype());
  // A gradient is floating-point; the kernels would read any other dtype at the wrong width.
  check(is_floating(input.dtype()), "extremum_backward: expected a floating-point dtype, got {}", input.dtype());
  const Dims expected = cpu::reduced_sizes(input.sizes(), cpu::reduce_mask(call.attrs.get<Dims>("dims"),
                                           input.dim(), "extremum_backward"), call.attrs.get<bool>("keepdim"));
  check(call.input(0).sizes() == expected && call.input(2).sizes() == expected,
        "extremum_backward: grad {} and result {} must have the reduced shape {}", call.input(0).sizes(),
        call.input(2).sizes(), expected);
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = input.dtype();
}

// ---- backward rules ----

// `grad` (the reduction's output shape) with size-1 dims back in the reduced positions, ready to
// expand to the input's shape. Views only: no copies.
Tensor restore_reduced_dims(const Tensor& grad, const BackwardContext& ctx) {
  const Dims& sizes = ctx.input_metas[0].sizes;
  const uint32_t mask = cpu::reduce_mask(ctx.attrs.get<Dims>("dims"), sizes.size(), "sum");
  if (ctx.attrs.get<bool>("keepdim") || mask == 0) return grad;
  const Dims kept_shape = cpu::reduced_sizes(sizes, mask, true);
  if (grad.is_contiguous()) return grad.view(kept_shape);
  Tensor restored = grad;
  for (int d = 0; d < sizes.size(); ++d)
    if (mask & (1u << d)) restored = restored.unsqueeze(d);
  return restored;
}

int64_t reduced_count(const BackwardContext& ctx) {
  const Dims& sizes = ctx.input_metas[0].sizes;
  const uint32_t mask = cpu::reduce_mask(ctx.attrs.get<Dims>("dims"), sizes.size(), "mean");
  int64_t count = 1;
  for (int d = 0; d < sizes.size(); ++d)
    if (mask & (1u << d)) count *= sizes[d];
  return count;
}

void sum_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = restore_reduced_dims(ctx.grad(), ctx).expand(ctx.input_metas[0].sizes);
}

// Scale the small reduced gradient before expanding it, not the expanded one.
void mean_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor scaled = mul(ctx.grad(), 1.0 / static_cast<double>(reduced_count(ctx)));
  grads[0] = restore_reduced_dims(scaled, ctx).expand(ctx.input_metas[0].sizes);
}

void extremum_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("extremum_backward");
  grads[0] = dispatch_one(op, {ctx.grad(), ctx.input(0), ctx.output(0)},
                          {{"dims", ctx.attrs.get<Dims>("dims")}, {"keepdim", ctx.attrs.get<bool>("keepdim")}});
}

Tensor prod_over(const Tensor& x, const Dims& dims) {
  static const OpDef& op = lookup_op("prod");
  return dispatch_one(op, {x}, {{"dims", dims}, {"keepdim", true}});
}

// d prod / d x_i is the product of the other elements of x_i's group. PyTorch forms it from
// exclusive running products; here it comes from the group's product P of its nonzero elements
// and its count Z of zeros, never dividing by a zero, and so that a create_graph backward gets
// the second derivative too (S, the sum of the group's zeros, is 0 with derivative 1 in each):
//   Z = 0: P / x_i;
//   Z = 1: P at the zero, (P / x_i) * S beside it;
//   Z = 2: P * (S - x_i) at a zero (the other zero), 0 beside them;
//   Z > 2: 0 (every second derivative is 0 too).
// With a zero in the group, a P / x_i that overflowed counts as 0: inf * 0 would be NaN where
// PyTorch's running products give 0.
void prod_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& x = ctx.input(0);
  const Dims& dims = ctx.attrs.get<Dims>("dims");
  const Tensor zero = scalar_like(0.0, x), one = scalar_like(1.0, x);
  const Tensor is_zero = eq(x, zero);
  const Tensor zero_count = sum(is_zero, dims, true);  // int64, per group
  auto zeros_are = [&](double count) { return eq(zero_count, scalar_like(count, zero_count)); };
  const Tensor nonzero_x = where(is_zero, one, x);
  const Tensor product = prod_over(nonzero_x, dims);
  const Tensor zeros_sum = sum(where(is_zero, x, zero), dims, true);
  const Tensor quotient = div(product, nonzero_x);
  const Tensor finite_quotient = where(isfinite(quotient), quotient, zero);
  const Tensor beside_zeros =
      where(zeros_are(0.0), quotient, where(zeros_are(1.0), mul(finite_quotient, zeros_sum), zero));
  const Tensor at_zeros = where(zeros_are(1.0), product, where(zeros_are(2.0), mul(product, sub(zeros_sum, x)), zero));
  grads[0] = mul(restore_reduced_dims(ctx.grad(), ctx), where(is_zero, at_zeros, beside_zeros));
}

// d var / d x = 2 (x - mean) / (N - correction), in PyTorch's two forms (var_backward): with dims,
// that factor even where N - correction <= 0 (infinite at 0, negative past it); without dims (or
// for a 0-d input) there, grad * where(x == mean, NaN, +inf), +inf on both sides of the mean.
void var_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& input = ctx.input(0);
  const Dims& dims = ctx.attrs.get<Dims>("dims");
  // In double: N - correction overflows int64 for a correction near its limits.
  const double freedom =
      static_cast<double>(reduced_count(ctx)) - static_cast<double>(ctx.attrs.get<int64_t>("correction"));
  const Tensor group_mean = mean(input, dims, true);
  if ((dims.empty() || input.dim() == 0) && freedom <= 0.0) {
    const Tensor unbounded = where(eq(input, group_mean), scalar_like(std::numeric_limits<double>::quiet_NaN(), input),
                                   scalar_like(std::numeric_limits<double>::infinity(), input));
    grads[0] = mul(restore_reduced_dims(ctx.grad(), ctx), unbounded);
    return;
  }
  const Tensor scaled = mul(ctx.grad(), 2.0 / freedom);
  grads[0] = mul(sub(input, group_mean), restore_reduced_dims(scaled, ctx));
}

OpDef reduction(const char* name, const char* schema, ShapeRule infer, Kernel kernel, BackwardRule backward,
                uint32_t save_inputs = 0, uint32_t save_outputs = 0) {
  OpDef def = make_op(name, schema, OpKind::Reduction, infer, kernel, backward);
  def.save_inputs = save_inputs;
  def.save_outputs = save_outputs;
  return def;
}

void register_reduction_ops(OpRegistry& registry) {
  registry.add(reduction("sum", "sum(Tensor a, int[] dims=[], bool keepdim=False) -> Tensor", sum_shape,
                         cpu::sum_kernel, sum_backward));
  registry.add(reduction("mean", "mean(Tensor a, int[] dims=[], bool keepdim=False) -> Tensor",
                         floating_reduce_shape, cpu::mean_kernel, mean_backward));
  registry.add(reduction("amax", "amax(Tensor a, int[] dims=[], bool keepdim=False) -> Tensor", extremum_shape,
                         cpu::amax_kernel, extremum_backward, 0b1, 0b1));
  registry.add(reduction("amin", "amin(Tensor a, int[] dims=[], bool keepdim=False) -> Tensor", extremum_shape,
                         cpu::amin_kernel, extremum_backward, 0b1, 0b1));
  registry.add(reduction("prod", "prod(Tensor a, int[] dims=[], bool keepdim=False) -> Tensor", sum_shape,
                         cpu::prod_kernel, prod_backward, 0b1));
  registry.add(reduction("any", "any(Tensor a, int[] dims=[], bool keepdim=False) -> Tensor", logical_reduce_shape,
                         cpu::any_kernel, nullptr));
  registry.add(reduction("all", "all(Tensor a, int[] dims=[], bool keepdim=False) -> Tensor", logical_reduce_shape,
                         cpu::all_kernel, nullptr));
  registry.add(reduction("var", "var(Tensor a, int[] dims=[], bool keepdim=False, int correction=1) -> Tensor",
                         floating_reduce_shape, cpu::var_kernel, var_backward, 0b1));
  registry.add(reduction("argmax", "argmax(Tensor a, int? dim=None, bool keepdim=False) -> Tensor", arg_shape,
                         cpu::argmax_kernel, nullptr));
  registry.add(reduction("argmin", "argmin(Tensor a, int? dim=None, bool keepdim=False) -> Tensor", arg_shape,
                         cpu::argmin_kernel, nullptr));
  OpDef backward = reduction("extremum_backward",
                             "extremum_backward(Tensor grad, Tensor input, Tensor result, int[] dims, bool keepdim) -> Tensor",
                             extremum_backward_shape, cpu::extremum_backward_kernel, extremum_backward_rule);
  backward.kind = OpKind::Other;
  // Its own backward (create_graph) reads the input and the result, through which no gradient
  // flows: the share is constant in them away from ties (a tie moved by any change of one).
  backward.save_inputs = 0b110;
  backward.nondifferentiable_inputs = 0b110;
  registry.add(std::move(backward));
}

const OpRegistration registration(register_reduction_ops);

}  // namespace
}  // namespace ember::ops
