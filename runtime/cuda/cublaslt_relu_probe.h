// Whether cuBLASLt's fused ReLU epilogue passes NaN through, as fn::Relu and torch.relu do.
#pragma once

#include "runtime/dtype.h"

namespace ember::cuda {

// True when a NaN product leaves cuBLASLt's ReLU epilogues (with and without bias) as NaN for
// `dtype` on `device`, so linear may fuse its ReLU. Probed once per device, dtype and TF32 switch
// (products of NaNs at 4^3 and 256^3, queued on `stream` and waited for); during CUDA-graph
// capture, where nothing may wait, it answers false without deciding, so the ReLU runs as its
// own kernel until a call outside capture has probed. The probe cannot cover every kernel
// cuBLASLt may pick for other shapes; test_cuda_gemm.cpp checks NaN through fused linear too.
bool relu_epilogue_keeps_nan(DType dtype, int device, void* stream);

}  // namespace ember::cuda
