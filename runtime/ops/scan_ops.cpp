// Running reductions along one dim: cumsum(a; dim, reverse), cumprod(a; dim), cummax(a; dim) and
// cummin(a; dim) -> (values, int64 indices), logcumsumexp(a; dim, reverse). `reverse` scans from
// the end; it is the gradient of the forward form (PyTorch's flip(scan(flip(grad)))) and not part
// of the public functions. Dtypes as in PyTorch: cumsum and cumprod take integers and bool to
// int64 and keep floating dtypes, cummax and cummin keep every dtype, logcumsumexp takes floating
// inputs only. Kernels in kernels/cpu/scan_kernels.h and kernels/cuda/scan.h.
#include <limits>

#include "kernels/cpu/scan_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/registry.h"

namespace ember::ops {

namespace {

void arithmetic_scan_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);  // a 0-d input takes dim 0 or -1
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = is_floating(input.dtype()) ? input.dtype() : kInt64;
}

void extremum_scan_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = input.dtype();
  outputs[1].sizes = input.sizes();
  outputs[1].dtype = kInt64;
}

void logcumsumexp_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  check(is_floating(input.dtype()),
        "logcumsumexp: expected a floating-point input, got {} (shape {}), as PyTorch's logcumsumexp is not "
        "implemented for integer or bool tensors; convert with to_dtype first",
        input.dtype(), input.sizes());
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = input.dtype();
}

int64_t dim_of(const BackwardContext& ctx) { return ctx.attrs.get<int64_t>("dim"); }

Tensor reversed_cumsum(const Tensor& a, int64_t dim) {
  static const OpDef& op = lookup_op("cumsum");
  return dispatch_one(op, {a}, {{"dim", dim}, {"reverse", true}});
}

// Element i of the input reaches every output at or after i (before it, reversed): the gradient
// is the running sum of the gradient in the other direction.
void cumsum_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("cumsum");
  grads[0] = dispatch_one(op, {ctx.grad()}, {{"dim", dim_of(ctx)}, {"reverse", !ctx.attrs.get<bool>("reverse")}});
}

// y_j = x_0 ... x_j, so d(sum_j g_j y_j)/dx_k = sum_{j >= k} g_j prod_{i <= j, i != k} x_i. Along
// each slice, with z the first zero of x and z2 the second:
//   k < z:      reversed_cumsum(g y)_k / x_k (x_k is not 0);
//   k = z:      reversed_cumsum(g y1)_k, y1 the running product with x_z replaced by 1;
//   z < k < z2: x_z reversed_cumsum(g y1)_k / x_k, which is 0;
//   k = z2:     x_z reversed_cumsum(g y2)_k, y2 with x_z and x_z2 replaced by 1, also 0;
//   k > z2:     0 (every term holds two zeros).
// No element that may be 0 is divided by, and each case is the polynomial itself where it holds,
// so autograd through this rule gives exact second derivatives across zeros, as PyTorch's
// (whose create_graph path is an O(n^2) loop). The zero x_z written as a factor carries the
// derivative the 0 alone would drop; a quotient that overflowed is taken as 0 there (inf * 0
// would be NaN where PyTorch gives 0).
void cumprod_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& cumprod_op = lookup_op("cumprod");
  const int64_t dim = dim_of(ctx);
  const Tensor& x = ctx.input(0);
  const Tensor& g = ctx.grad();
  if (x.numel() <= 1) {  // y = x: the identity, also for a 0-d input
    grads[0] = g;
    return;
  }
  const Tensor zero = scalar_like(0.0, x), one = scalar_like(1.0, x);
  const Tensor is_zero = eq(x, zero);
  const Tensor zeros_so_far = cumsum(is_zero, dim);  // int64: zeros at or before each element
  auto zeros_so_far_are = [&](double count) { return eq(zeros_so_far, scalar_like(count, zeros_so_far)); };
  const Tensor before_first = zeros_so_far_are(0.0);
  const Tensor at_first = logical_and(is_zero, zeros_so_far_are(1.0));
  const Tensor between = logical_and(logical_not(is_zero), zeros_so_far_are(1.0));
  const Tensor at_second = logical_and(is_zero, zeros_so_far_are(2.0));
  auto running_product = [&](const Tensor& factors) {
    return dispatch_one(cumprod_op, {factors}, {{"dim", dim}});
  };
  auto finite_or_zero = [&](const Tensor& a) { return where(isfinite(a), a, zero); };
  // A term g_j y_j holding more than `zeros` of the slice's zeros is 0 times the rest: where the
  // rest is inf or NaN (an inf after the zeros), it is taken as 0, as PyTorch's masks do, instead
  // of poisoning the sum; finite terms are kept as they are, so second derivatives stay exact.
  auto quiet_past = [&](const Tensor& terms, double zeros) {
    return where(gt(zeros_so_far, scalar_like(zeros, zeros_so_far)), finite_or_zero(terms), terms);
  };

  const Tensor first_zero = sum(where(at_first, x, zero), {dim}, true);  // x_z: 0, or nothing
  const Tensor before =
      div(reversed_cumsum(quiet_past(mul(g, ctx.output(0)), 0.0), dim), where(before_first, x, one));
  const Tensor skip_first = reversed_cumsum(quiet_past(mul(g, running_product(where(at_first, one, x))), 1.0), dim);
  const Tensor after_first = mul(first_zero, finite_or_zero(div(skip_first, where(between, x, one))));
  const Tensor first_two = logical_and(is_zero, logical_not(gt(zeros_so_far, scalar_like(2.0, zeros_so_far))));
  const Tensor skip_two = reversed_cumsum(quiet_past(mul(g, running_product(where(first_two, one, x))), 2.0), dim);
  const Tensor at_second_value = mul(first_zero, finite_or_zero(skip_two));
  grads[0] = where(before_first, before,
                   where(at_first, skip_first,
                         where(between, after_first, where(at_second, at_second_value, zero))));
}

// values = input gathered at indices along dim, so the gradient scatters back to the recorded
// index (PyTorch's cummaxmin_backward). scatter_add, since one element may be the extremum of
// many outputs; it has a backward rule of its own (a gather) for second derivatives.
void extremum_scan_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& scatter_add = lookup_op("scatter_add");
  const TensorMeta& input = ctx.input_metas[0];
  const Tensor grad_input = zeros(input.sizes, {.dtype = ctx.grad(0).dtype(), .device = input.device});
  grads[0] = dispatch_one(scatter_add, {grad_input, ctx.output(1), ctx.grad(0)}, {{"dim", dim_of(ctx)}});
}

// The most negative finite value of a floating dtype: PyTorch's stand-in for log(0) below.
double lowest_finite(DType dtype) {
  switch (dtype) {
    case kFloat64: return std::numeric_limits<double>::lowest();
    case kBFloat16: return -3.3895313892515355e38;  // (2 - 2^-7) 2^127
    case kFloat16: return -65504.0;
    default: return std::numeric_limits<float>::lowest();
  }
}

// d r_j / d x_k = exp(x_k - r_j) for j >= k, so grad_k = exp(x_k) sum_{j >= k} g_j exp(-r_j),
// formed as PyTorch's logcumsumexp_backward: the positive and negative parts of g go through a
// reversed logcumsumexp of log|g| - r, so nothing overflows; log 0 is the dtype's lowest finite
// value rather than -inf, and an input of -inf after a finite one gets gradient exp(-inf) = 0.
// Where every element so far is -inf (r_j = -inf) the gradient is NaN, as in PyTorch.
void logcumsumexp_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("logcumsumexp");
  const Tensor& g = ctx.grad();
  if (g.dim() == 0 || g.numel() == 0) {  // a single element: the identity
    grads[0] = g;
    return;
  }
  const Attrs reversed = {{"dim", dim_of(ctx)}, {"reverse", !ctx.attrs.get<bool>("reverse")}};
  const Tensor& x = ctx.input(0);
  const Tensor& result = ctx.output(0);
  const Tensor zero = scalar_like(0.0, g);
  const Tensor lowest = scalar_like(lowest_finite(g.dtype()), g);
  // log|g| of a zero g is never selected, but a create_graph backward still meets log's 1 / 0
  // there: the derivative w.r.t. such a g_j is NaN, as PyTorch's (the true one is linear in g,
  // sum_{k <= j} v_k exp(x_k - r_j); a log-domain rule cannot give it at g_j = 0, and a guard
  // would give a silent 0 instead).
  const Tensor log_magnitude = log(abs(g));
  auto part = [&](const Tensor& selected) {
    const Tensor log_grad = where(selected, log_magnitude, lowest);
    return exp(add(dispatch_one(op, {sub(log_grad, result)}, reversed), x));
  };
  grads[0] = sub(part(gt(g, zero)), part(lt(g, zero)));
}

OpDef extremum_scan(const char* name, const char* schema, Kernel kernel) {
  OpDef def = make_op(name, schema, OpKind::Other, extremum_scan_shape, kernel, extremum_scan_backward);
  def.num_outputs = 2;
  def.save_outputs = 0b10;  // the indices
  return def;
}

void register_scan_ops(OpRegistry& registry) {
  registry.add(make_op("cumsum", "cumsum(Tensor a, int dim, bool reverse=False) -> Tensor", OpKind::Other,
                       arithmetic_scan_shape, cpu::cumsum_kernel, cumsum_backward));
  OpDef cumprod_def = make_op("cumprod", "cumprod(Tensor a, int dim) -> Tensor", OpKind::Other, arithmetic_scan_shape,
                          cpu::cumprod_kernel, cumprod_backward);
  cumprod_def.save_inputs = 0b1;
  cumprod_def.save_outputs = 0b1;
  registry.add(std::move(cumprod_def));
  registry.add(extremum_scan("cummax", "cummax(Tensor a, int dim) -> (Tensor values, Tensor indices)",
                             cpu::cummax_kernel));
  registry.add(extremum_scan("cummin", "cummin(Tensor a, int dim) -> (Tensor values, Tensor indices)",
                             cpu::cummin_kernel));
  OpDef logcumsumexp = make_op("logcumsumexp", "logcumsumexp(Tensor a, int dim, bool reverse=False) -> Tensor",
                               OpKind::Other, logcumsumexp_shape, cpu::logcumsumexp_kernel, logcumsumexp_backward);
  logcumsumexp.save_inputs = 0b1;
  logcumsumexp.save_outputs = 0b1;
  registry.add(std::move(logcumsumexp));
}

const OpRegistration registration(register_scan_ops);

}  // namespace
}  // namespace ember::ops
