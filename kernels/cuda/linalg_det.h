// Host entry point of the CUDA slogdet's last step (linalg_det.cu): sign and log|det| of `count`
// matrices from their LU factors as cuSOLVER's getrf leaves them.
#pragma once

#include <cstdint>

namespace ember {
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda {

// lu: [count] packed n x n factors (the diagonal of U is at i * n + i in either storage order);
// pivots: int64 [count, n], 1-based. Writes sign (-1, 0 or 1) and logabsdet (-inf when a pivot
// is zero) for each matrix, in dtype. Returns the launch's cudaError_t.
int launch_slogdet_from_lu(DType dtype, const void* lu, const int64_t* pivots, void* sign, void* logabsdet,
                           int64_t count, int64_t n, void* stream);

}  // namespace ember::cuda
