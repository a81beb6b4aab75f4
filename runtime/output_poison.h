// EMBER_POISON_OUTPUTS=1: the dispatcher fills every freshly allocated output with NaN (floats)
// or 0xA5 bytes before its kernel runs, so tests catch kernels that leave elements unwritten.
#pragma once

#include "runtime/tensor.h"

namespace ember {

bool poison_outputs_in_environment();
// Whether EMBER_POISON_OUTPUTS is set (to anything but 0); read once per process. Inline: the
// dispatcher asks for every output it allocates.
inline bool poison_outputs() {
  static const bool enabled = poison_outputs_in_environment();
  return enabled;
}
// Fills `tensor` with the poison of its dtype: NaN, 0xA5 bytes on the CPU (0xA5A5A5A5 through
// fill_ on other devices); bool tensors are left alone.
void poison(const Tensor& tensor);

}  // namespace ember
