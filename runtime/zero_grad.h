// zero_grads: the one body of nn::Module::zero_grad and optim::Optimizer::zero_grad.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember {

// set_to_none: clears every parameter's .grad, set or not (a compiled step then clears, on every
// replay, whatever eager would); otherwise zeroes the gradients that exist, in place.
void zero_grads(const std::vector<Tensor>& parameters, bool set_to_none);

}  // namespace ember
