// CPU dropout: draws the keep mask from Philox and applies it (the rule lives in kernels/dropout.h).
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// outputs: y (input's dtype), mask (bool). attrs p, seed, offset.
void dropout_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
