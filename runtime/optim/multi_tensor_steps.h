// The multi-tensor optimizer update ops (registry ops _multi_sgd_step_ and _multi_adam_step_,
// defined in runtime/ops/multi_tensor_optim_ops.cpp): one call updates many parameters of one
// device and dtype with the same hyperparameters, like PyTorch's foreach/fused optimizers. On
// CUDA that is one kernel launch per batch of parameters instead of one per parameter; on the CPU
// it is exactly the per-parameter kernel in a loop, so results are bit-identical to sgd_step_ /
// adam_step_. SGD, Adam and AdamW use them unless their `foreach` option is off, or while a
// dispatch mode (compile's capture) is active; a compiled step's lowered executor calls them for
// runs of the per-parameter steps it captured (graph/lowered_optimizer_runs.cpp). Call them with
// NoGradGuard.
#pragma once

#include <span>

#include "runtime/optim/fused_steps.h"

namespace ember::optim {

// Tensors per parameter in the ops' flat input list: (param, grad, momentum_buffer) for SGD,
// (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq) for Adam; absent state is an undefined tensor.
constexpr int kSgdStepWidth = 3;
constexpr int kAdamStepWidth = 5;

// momentum_buffers: one per parameter, or empty when args.momentum == 0. args.first_step applies
// to every buffer.
void multi_sgd_step_(std::span<const Tensor> params, std::span<const Tensor> grads,
                     std::span<const Tensor> momentum_buffers, const SgdStepArgs& args,
                     Where where = Where::current());

// max_exp_avg_sqs: one per parameter with args.amsgrad, else empty. args.step applies to all.
void multi_adam_step_(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> exp_avgs,
                      std::span<const Tensor> exp_avg_sqs, std::span<const Tensor> max_exp_avg_sqs,
                      const AdamStepArgs& args, Where where = Where::current());

}  // namespace ember::optim
