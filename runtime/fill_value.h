// What the fill functions share (masked_fill in functional_mask.cpp, index_fill in
// functional_index_more_fill.cpp): the fill value made a 0-d tensor like the input, and the
// in-place forms' refusal of a leaf that requires grad under their own name.
#pragma once

#include "runtime/tensor.h"

namespace ember::detail {

// value as a 0-d tensor of a's dtype on a's device. A tensor value must be 0-d; its gradient
// (if it requires grad) is the sum of the filled positions' gradients. A double must fit a's
// dtype (no silent wrap into an integer or bool).
Tensor fill_value(const Tensor& a, const Tensor& value, const char* function);
Tensor fill_value(const Tensor& a, double value, const char* function);

// The in-place functions refuse a leaf that requires grad under their own name; copy_ would
// refuse it too, naming itself.
void check_writable(const Tensor& a, const char* function);

}  // namespace ember::detail
