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

}  // namespace ember
