// What every cuSOLVER-backed linear-algebra kernel shares (the solve family's LU and Cholesky,
// the decompositions' QR, eigh and SVD): data types, workspaces, batch counts and the read-back of
// cuSOLVER's per-matrix status.
#pragma once

#include <library_types.h>

#include <cstddef>
#include <vector>

#include "runtime/tensor.h"

namespace ember::cuda {

// CUDA_R_32F or CUDA_R_64F.
cudaDataType data_type_of(DType dtype);

// At least `bytes` of device scratch from the caching allocator (stream-ordered, so dropping it
// after the queued calls is safe).
Tensor device_workspace(size_t bytes, Device device);

// The number of matrices in a batch [*, rows, cols].
int64_t matrix_count(const Tensor& tensor);

// The int32 statuses of `count` queued cuSOLVER calls, on the host: synchronizes the stream, as
// torch's checked linear algebra does. Inside a CUDA graph capture (mode=reduce_overhead) no
// stream may be synchronized, so `op` is refused there with an error that says why.
std::vector<int> read_infos(const Tensor& info, int64_t count, void* stream, const char* op);

}  // namespace ember::cuda
