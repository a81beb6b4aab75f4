// CPU concatenation (cat): copies each input into its window of the output.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// PyTorch's legacy rule: a 1-D empty tensor is skipped by cat, whatever the other shapes are.
inline bool cat_skips(const Dims& sizes) { return sizes.size() == 1 && sizes[0] == 0; }

// inputs: any number of tensors whose shapes agree except at dim; attr dim. Converts each input
// to the output's (promoted) dtype while copying.
void cat_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
