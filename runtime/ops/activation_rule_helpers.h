// What the backward rules of the activations' backward ops share (activation_backward_rules.cpp,
// activation_more_backward_rules.cpp): each op computes grad_input = grad * f'(x), so its gradient in
// grad is the op itself on the incoming gradient, and its gradient in x is incoming * grad * f''(x).
#pragma once

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember::ops::activation_rules {

// The op of this node (a backward op) applied to `incoming` in place of `grad`: its derivative in grad.
inline Tensor same_op_on(const char* name, const BackwardContext& ctx, const Tensor& incoming) {
  const OpDef& op = lookup_op(name);
  return dispatch_one(op, {incoming, ctx.input(1)}, ctx.attrs);
}

// incoming * grad: the factor every second derivative starts from.
inline Tensor incoming_times_grad(const BackwardContext& ctx) { return mul(ctx.grad(), ctx.input(0)); }

// These ops broadcast grad and the saved tensor like binary ops: each gradient is summed back to
// its input's shape.
inline Tensor to_input(const BackwardContext& ctx, int i, const Tensor& gradient) {
  return sum_to_size(gradient, ctx.input_metas[i].sizes);
}

// `value` where `condition` holds, zero elsewhere.
inline Tensor only_where(const Tensor& condition, const Tensor& value) {
  return where(condition, value, zeros_like(value));
}

}  // namespace ember::ops::activation_rules
