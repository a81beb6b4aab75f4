// layer_norm(input, weight?, bias?; normalized_shape, eps) -> y, mean, rstd and its fused gradient
// op layer_norm_backward. mean and rstd have the input's leading shape (float32 for 16-bit
// inputs); they are saved for backward, and gradients flowing into them are ignored. A
// create_graph backward computes the gradients with differentiable ops instead of the fused op.
#include "kernels/cpu/norm_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember {

namespace {

DType stat_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// The input's sizes before the normalized dims, after checking that its trailing dims match.
Dims leading_shape(const char* op, const Tensor& input, const Dims& normalized_shape) {
  check(normalized_shape.size() >= 1, "{}: normalized_shape must have at least one dim, got {}", op,
        normalized_shape);
  const int lead = input.dim() - normalized_shape.size();
  bool matches = lead >= 0;
  for (int i = 0; matches && i < normalized_shape.size(); ++i) matches = input.size(lead + i) == normalized_shape[i];
  check(matches, "{}: normalized_shape {} does not match the trailing dims of the input {}", op,
        normalized_shape, input.sizes());
  Dims leading;
  for (int i = 0; i < lead; ++i) leading.push_back(input.size(i));
  return leading;
}

// weight and bias, when given, have exactly normalized_shape and the input's dtype.
void check_parameter(const char* op, const char* role, const Tensor& parameter, const Tensor& input,
                     const Dims& normalized_shape) {
  if (!parameter.defined()) return;
  check(parameter.sizes() == normalized_shape, "{}: {} has shape {} but normalized_shape is {}", op, role,
        parameter.sizes(), normalized_shape);
  check(parameter.dtype() == input.dtype(), "{}: {} has dtype {} but the input has dtype {}", op, role,
        parameter.dtype(), input.dtype());
}

void layer_norm_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  const Dims& normalized_shape = call.attrs.get<Dims>("normalized_shape");
  check(is_floating(input.dtype()), "layer_norm: expected a floating-point input, got {} (shape {})",
        input.dtype(), input.sizes());
  check(call.attrs.get<double>("eps") >= 0.0, "layer_norm: eps must be non-negative, got {}",
        call.attrs.get<double>("eps"));
  const Dims leading = leading_shape("layer_norm", input, normalized_shape);
  check_parameter("layer_norm", "weight", call.input(1), input, normalized_shape);
  check_parameter("layer_norm", "bias", call.input(2), input, normalized_shape);
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = input.dtype();
  for (int i : {1, 2}) {
    outputs[i].sizes = leading;
    outputs[i].dtype = stat_dtype(input.dtype());
  }
}

void layer_norm_backward_shape(const OpCall& call, OutputMetas& outputs) {
  const char* op = "layer_norm_backward";
  const Tensor& grad_y = call.input(0);
  const Tensor& input = call.input(1);
  const Dims& normalized_shape = call.attrs.get<Dims>("normalized_shape");
  check(is_floating(input.dtype()), "{}: expected a floating-point input, got {}", op, input.dtype());
  const Dims leading = leading_shape(op, input, normalized_shape);
  check(grad_y.sizes() == input.sizes() && grad_y.dtype() == input.dtype(),
        "{}: grad_y ({} {}) must match the input ({} {})", op, grad_y.sizes(), grad_y.dtype(),
        input.sizes(), input.dtype());
  for (int i : {2, 3}) {
    const Tensor& stat = call.input(i);
    check(stat.sizes() == leading && stat.dtype() == stat_dtype(input.dtype()),
          "{}: {} must have shape {} and dtype {}, got {} {}", op, i == 2 ? "mean" : "rstd", leading,
          stat_dtype(input.dtype()), stat.sizes(), stat.dtype());
  }
  check_parameter(op, "weight", call.input(4), input, normalized_shape);
  outputs[0] = {input.sizes(), input.dtype(), outputs[0].device};
  outputs[1] = {normalized_shape, input.dtype(), outputs[1].device};
  outputs[2] = {normalized_shape, input.dtype(), outputs[2].device};
}

// layer_norm's gradients written with differentiable ops, for a create_graph backward: the fused
// layer_norm_backward has no backward of its own. The statistics are recomputed from the input
// (the saved mean and rstd are outputs whose gradients layer_norm ignores, so a second derivative
// must not flow through them); 16-bit inputs compute in float32, as the fused kernel does.
// With x^ = (x - mean) rstd and g^ = grad_y * weight over the N normalized elements:
//   grad_input = rstd (g^ - mean(g^) - x^ mean(g^ x^)), grad_weight = sum over leading dims of
//   grad_y x^, grad_bias = sum over leading dims of grad_y.
void layer_norm_backward_recorded(const BackwardContext& ctx, std::span<Tensor> grads) {
  const Tensor& input = ctx.input(0);
  const DType dtype = input.dtype();
  const DType compute = stat_dtype(dtype) == kFloat64 ? kFloat64 : kFloat32;
  const auto widened = [&](const Tensor& t) { return t.dtype() == compute ? t : to_dtype(t, compute); };
  const auto narrowed = [&](const Tensor& t) { return t.dtype() == dtype ? t : to_dtype(t, dtype); };
  const int normalized = ctx.attrs.get<Dims>("normalized_shape").size();
  const int leading = input.dim() - normalized;
  Dims normalized_dims, leading_dims;
  for (int d = 0; d < input.dim(); ++d) (d < leading ? leading_dims : normalized_dims).push_back(d);
  const Tensor x = widened(input);
  const Tensor grad_y = widened(ctx.grad(0));
  const Tensor centered = sub(x, mean(x, normalized_dims, true));
  const Tensor variance = mean(mul(centered, centered), normalized_dims, true);
  const Tensor rstd = rsqrt(add(variance, ctx.attrs.get<double>("eps")));
  const Tensor normalized_x = mul(centered, rstd);
  const Tensor& weight = ctx.saved_inputs[1];
  if (ctx.needs_input_grad[0]) {
    const Tensor scaled = weight.defined() ? mul(grad_y, widened(weight)) : grad_y;
    const Tensor projection = mul(normalized_x, mean(mul(scaled, normalized_x), normalized_dims, true));
    grads[0] = narrowed(mul(rstd, sub(sub(scaled, mean(scaled, normalized_dims, true)), projection)));
  }
  const auto over_leading = [&](const Tensor& t) { return narrowed(leading > 0 ? sum(t, leading_dims) : t); };
  if (ctx.needs_input_grad[1]) grads[1] = over_leading(mul(grad_y, normalized_x));
  if (ctx.needs_input_grad[2]) grads[2] = over_leading(grad_y);
}

void layer_norm_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  // Grad mode is on inside a backward rule only when a create_graph backward runs it.
  if (grad_mode_enabled()) {
    layer_norm_backward_recorded(ctx, grads);
    return;
  }
  static const OpDef& backward_op = lookup_op("layer_norm_backward");
  const Tensor& weight = ctx.saved_inputs[1];  // may be undefined
  const std::array<Tensor, 5> inputs{ctx.grad(0), ctx.input(0), ctx.output(1), ctx.output(2), weight};
  TensorList result = dispatch(OpCall{backward_op, inputs, ctx.attrs});
  for (int i = 0; i < 3; ++i)
    if (ctx.needs_input_grad[i]) grads[i] = result[i];
}

OpDef make(const char* name, const char* schema, ShapeRule infer, Kernel kernel) {
  OpDef def = make_op(name, schema, OpKind::Other, infer, kernel);
  def.num_outputs = 3;
  return def;
}

void register_norm_ops(OpRegistry& registry) {
  OpDef layer_norm = make("layer_norm",
                          "layer_norm(Tensor input, Tensor? weight, Tensor? bias, int[] normalized_shape, "
                          "float eps) -> (Tensor y, Tensor mean, Tensor rstd)",
                          layer_norm_shape, cpu::layer_norm_kernel);
  layer_norm.backward = layer_norm_backward;
  layer_norm.save_inputs = 0b011;
  layer_norm.save_outputs = 0b110;
  registry.add(std::move(layer_norm));
  registry.add(make("layer_norm_backward",
                    "layer_norm_backward(Tensor grad_y, Tensor input, Tensor mean, Tensor rstd, Tensor? "
                    "weight, int[] normalized_shape) -> (Tensor grad_input, Tensor grad_weight, "
                    "Tensor grad_bias)",
                    layer_norm_backward_shape, cpu::layer_norm_backward_kernel));
}

const OpRegistration registration(register_norm_ops);

}  // namespace
}  // namespace ember
