// CPU kernels of the range factories: arange and linspace (range_kernels.cpp says why they sit apart).
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

void arange_kernel(const OpCall& call, TensorList& outputs);
void linspace_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
