// sign and log|det| from LU factors on the GPU, one thread per matrix: det(A) = det(P) prod U_ii,
// det(P) the parity of the row swaps; see linalg_det.h.
#include <cuda_runtime.h>

#include "kernels/cuda/linalg_det.h"
#include "kernels/cuda/reduce_common.cuh"  // DTypeCode: the dtype without runtime/dtype.h (fmt)

namespace ember::cuda {

namespace {

template <typename T>
__global__ void slogdet_kernel(const T* __restrict__ lu, const int64_t* __restrict__ pivots, T* sign, T* logabsdet,
                               int64_t count, int64_t n) {
  const int64_t matrix = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (matrix >= count) return;
  T sign_product(1), log_sum(0);
  for (int64_t k = 0; k < n; ++k) {
    const T pivot = lu[matrix * n * n + k * n + k];
    if (pivots[matrix * n + k] != k + 1) sign_product = -sign_product;
    sign_product *= pivot > T(0) ? T(1) : (pivot < T(0) ? T(-1) : T(0));
    log_sum += log(fabs(pivot));  // log(0) = -inf for a singular matrix, as torch
  }
  sign[matrix] = sign_product;
  logabsdet[matrix] = log_sum;
}

}  // namespace

int launch_slogdet_from_lu(DType dtype, const void* lu, const int64_t* pivots, void* sign, void* logabsdet,
                           int64_t count, int64_t n, void* stream) {
  if (count == 0) return 0;
  constexpr int kThreads = 128;
  const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  const auto on = static_cast<cudaStream_t>(stream);
  if (static_cast<int>(dtype) == detail::kFloat64) {
    slogdet_kernel<double><<<blocks, kThreads, 0, on>>>(
        static_cast<const double*>(lu), pivots, static_cast<double*>(sign), static_cast<double*>(logabsdet), count, n);
  } else {
    slogdet_kernel<float><<<blocks, kThreads, 0, on>>>(static_cast<const float*>(lu), pivots, static_cast<float*>(sign),
                                                       static_cast<float*>(logabsdet), count, n);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace ember::cuda
