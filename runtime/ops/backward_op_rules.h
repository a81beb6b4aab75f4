// Backward rules of the dedicated backward ops (relu_backward, softmax_backward, ...): what a
// create_graph backward needs to differentiate a gradient again. Each op is registered in its
// family's file, which points its OpDef::backward here; the math is in the .cpp files beside.
// Under a plain backward these rules never run (backward runs without grad mode, so the backward
// ops record no nodes).
#pragma once

#include <span>

#include "runtime/ops/registry.h"

namespace ember::ops {

// activation_backward_rules.cpp: relu_backward(grad, output), sigmoid_backward(grad, output),
// tanh_backward(grad, output), silu_backward(grad, input), gelu_backward(grad, input; tanh),
// leaky_relu_backward(grad, input; negative_slope), elu_backward(grad, input; alpha),
// softplus_backward(grad, input; beta, threshold). Each is linear in grad, so grad's gradient is
// the op itself applied to the incoming gradient.
void relu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void sigmoid_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void tanh_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void silu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void gelu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void leaky_relu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void elu_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void softplus_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
// activation_more_backward_rules.cpp: hardtanh_backward(grad, input; min_val, max_val),
// hardswish_backward, hardsigmoid_backward, mish_backward, log_sigmoid_backward (grad, input).
void hardtanh_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void hardswish_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void hardsigmoid_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void mish_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void log_sigmoid_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);

// loss_backward_rules.cpp: softmax_backward(grad, output; dim), log_softmax_backward(grad, output;
// dim), nll_loss_backward(grad, log_probs, target), cross_entropy_backward(grad, logits, target),
// extremum_backward(grad, input, result; dims, keepdim).
void softmax_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void log_softmax_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void nll_loss_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void cross_entropy_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);
void extremum_backward_rule(const BackwardContext& ctx, std::span<Tensor> grads);

}  // namespace ember::ops
