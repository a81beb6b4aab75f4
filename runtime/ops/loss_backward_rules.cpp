// Backward rules of softmax_backward, log_softmax_backward, nll_loss_backward,
// cross_entropy_backward and extremum_backward (backward_op_rules.h). `incoming` is the gradient
// of the op's result; each op is linear in its grad input, so that input's gradient is the
// transposed map applied to `incoming`.
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/backward_op_rules.h"

namespace ember::ops {

namespace {

Attrs dim_attrs(int64_t dim) { return Attrs{{"dim", dim}}; }

Tensor softmax_backward_of(const Tensor& grad, const Tensor& output, int64_t dim) {
  static const OpDef& op = lookup_op("softmax_backward");
  return dispatch_one(op, {grad, output}, dim_attrs(dim));
}

}  // namespace

// r = y (g - sum(g y)) with y = softmax(x). Its Jacobian in g is softmax's, which is symmetric:
// d/dg = softmax_backward(incoming, y). d/dy_j = incoming_j (g_j - sum(g y)) - g_j sum(incoming y).
void softmax_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  const int64_t dim = ctx.attrs.get<int64_t>("dim");
  const Tensor& incoming = ctx.grad();
  const Tensor& grad = ctx.input(0);
  const Tensor& output = ctx.input(1);
  if (ctx.needs_input_grad[0]) grads[0] = softmax_backward_of(incoming, output, dim);
  if (!ctx.needs_input_grad[1]) return;
  const Tensor centered = sub(grad, sum(mul(grad, output), {dim}, true));
  grads[1] = sub(mul(incoming, centered), mul(grad, sum(mul(incoming, output), {dim}, true)));
}

// r = g - p sum(g) with p = e^y, y = log_softmax(x): d/dg = incoming - sum(incoming p),
// d/dy = -incoming p sum(g).
void log_softmax_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  const int64_t dim = ctx.attrs.get<int64_t>("dim");
  const Tensor& incoming = ctx.grad();
  const Tensor probabilities = exp(ctx.input(1));
  if (ctx.needs_input_grad[0]) grads[0] = sub(incoming, sum(mul(incoming, probabilities), {dim}, true));
  if (ctx.needs_input_grad[1])
    grads[1] = neg(mul(mul(incoming, probabilities), sum(ctx.input(0), {dim}, true)));
}

// nll_loss_backward puts -g (over the counted rows for mean) at each row's target, 0 on ignored
// rows: its transpose reads incoming at the targets the same way, which is nll_loss itself.
// The log-probabilities only give the shape: no gradient.
void nll_loss_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& nll_loss_op = lookup_op("nll_loss");
  if (ctx.needs_input_grad[0]) grads[0] = dispatch_one(nll_loss_op, {ctx.grad(), ctx.input(2)}, ctx.attrs);
}

// r = c (softmax(z) - q) with q the (smoothed) one-hot target and c each row's scale: its grad
// (reduction none), or the scalar grad over the counted rows (mean), 0 on ignored rows.
// d/dgrad: r is linear in grad, so the sum of incoming * r(grad = 1) over what grad was broadcast
// to. d/dz = softmax_backward(incoming c, softmax(z)); c comes from nll_loss_backward, which puts
// -c at each row's target.
void cross_entropy_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& backward_op = lookup_op("cross_entropy_backward");
  static const OpDef& nll_backward_op = lookup_op("nll_loss_backward");
  const Tensor& incoming = ctx.grad();
  const Tensor& grad = ctx.input(0);
  const Tensor& logits = ctx.input(1);
  const Tensor& target = ctx.input(2);
  if (ctx.needs_input_grad[0]) {
    const Tensor per_unit = dispatch_one(backward_op, {ones_like(grad), logits, target}, ctx.attrs);
    const Tensor product = mul(incoming, per_unit);
    grads[0] = ctx.attrs.get<int64_t>("reduction") == 0 ? sum(product, {-1}) : sum(product);
  }
  if (!ctx.needs_input_grad[1]) return;
  const Attrs nll_attrs{{"reduction", ctx.attrs.get<int64_t>("reduction")},
                        {"ignore_index", ctx.attrs.get<int64_t>("ignore_index")}};
  const Tensor row_scale = neg(sum(dispatch_one(nll_backward_op, {grad, logits, target}, nll_attrs), {-1}, true));
  grads[1] = softmax_backward_of(mul(incoming, row_scale), softmax(logits, -1), -1);
}

// extremum_backward shares grad among the elements equal to the result (linear in grad, constant
// in the input and result away from ties): d/dgrad sums incoming * share over the reduced dims.
void extremum_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads) {
  static const OpDef& op = lookup_op("extremum_backward");
  if (!ctx.needs_input_grad[0]) return;
  const TensorMeta& grad = ctx.input_metas[0];
  const Tensor unit = ones(grad.sizes, {.dtype = grad.dtype, .device = grad.device});
  const Tensor share = dispatch_one(op, {unit, ctx.input(1), ctx.input(2)}, ctx.attrs);
  grads[0] = sum(mul(ctx.grad(), share), ctx.attrs.get<Dims>("dims"), ctx.attrs.get<bool>("keepdim"));
}

}  // namespace ember::ops
