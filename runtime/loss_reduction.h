// What the loss functions share (functional_losses*.cpp): the check of a Reduction argument and
// the reduction of per-element losses, as PyTorch's apply_loss_reduction.
#pragma once

#include <string_view>

#include "runtime/functional.h"

namespace ember {

// Refuses a value outside the enum and BatchMean where `function` is not kl_div.
void check_reduction(std::string_view function, Reduction reduction, bool batchmean_allowed = false);

// None: the losses as they are; Sum: their sum; Mean: their mean (nan for no elements).
Tensor reduce_loss(const Tensor& losses, Reduction reduction);

// log(1 + exp(z)) without overflow: z + log1p(exp(-z)) for z > 0, log1p(exp(z)) elsewhere, each
// branch evaluated on its own side of 0 so that neither overflows (an unused branch's inf would
// make its masked gradient 0 * inf = NaN). Autograd's derivatives are sigmoid(z) and sigmoid'(z)
// everywhere, 1/2 and 1/4 at 0 (a form through |z| would have no curvature there).
Tensor log1p_exp(const Tensor& z);

}  // namespace ember
