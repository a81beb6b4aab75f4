// Whether cuBLASLt's fused ReLU epilogue passes NaN through, as fn::Relu and torch.relu do.
#pragma once

#include "runtime/dtype.h"

namespace ember::cuda {

// True when a NaN product leaves cuBLASLt's ReLU epilogue as NaN for `dtype` on `device`, so
// linear may fuse its ReLU. Probed once per device and dtype (a 4x4x4 product of NaNs, queued on
// `stream` and waited for); during CUDA-graph capture, where nothing may wait, it answers false
// without deciding, so the ReLU runs as its own kernel until a call outside capture has probed.
bool relu_epilogue_keeps_nan(DType dtype, int device, void* stream);

}  // namespace ember::cuda
