// nn::functional: the stateless forms of the layers (torch.nn.functional), so model code can say
// F::relu(x) or F::cross_entropy(logits, target) with `namespace F = ember::nn::functional;`.
// These are the ops of runtime/functional.h, losses included; dropout gets PyTorch's defaults
// (p = 0.5, training). embedding keeps ember's argument order (weight, indices[, padding_idx]).
#pragma once

#include "runtime/functional.h"

namespace ember::nn::functional {

using ember::binary_cross_entropy;
using ember::binary_cross_entropy_with_logits;
using ember::cross_entropy;
using ember::CrossEntropyOptions;
using ember::elu;
using ember::embedding;
using ember::gelu;
using ember::huber_loss;
using ember::kl_div;
using ember::l1_loss;
using ember::layer_norm;
using ember::leaky_relu;
using ember::linear;
using ember::log_softmax;
using ember::mse_loss;
using ember::nll_loss;
using ember::Reduction;
using ember::relu;
using ember::sigmoid;
using ember::silu;
using ember::smooth_l1_loss;
using ember::softmax;
using ember::softplus;
using ember::tanh;

inline Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, Where where = Where::current()) {
  return ember::dropout(input, p, training, where);
}

}  // namespace ember::nn::functional
