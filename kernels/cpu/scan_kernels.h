// CPU kernel of the running sum (scan_kernels.cpp). Attributes as in runtime/ops/scan_ops.cpp:
// dim, reverse.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// Each 1-D slice along dim is summed in order (from its end when reverse) by one thread, so the
// results do not depend on the thread count. Floating inputs accumulate in double and keep their
// dtype; integers and bool accumulate in int64 (wrapping, like PyTorch).
void cumsum_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
