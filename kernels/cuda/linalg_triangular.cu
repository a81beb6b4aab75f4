// Forward and back substitution on the GPU, and zeroing a strict triangle; see linalg_triangular.h.
#include <cuda_runtime.h>

#include "kernels/cuda/linalg_triangular.h"
#include "kernels/cuda/reduce_common.cuh"  // DTypeCode: the dtype without runtime/dtype.h (fmt)

namespace ember::cuda {

namespace {

constexpr int kThreads = 128;

// Thread t solves column t % k of matrix t / k: row after row, each x[i] takes the already solved
// rows' contributions away from b[i] and divides by the diagonal (unless unit).
template <typename T>
__global__ void triangular_solve_kernel(const T* __restrict__ triangle, T* __restrict__ x, int64_t count, int64_t n,
                                        int64_t k, bool upper, bool unit) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread >= count * k) return;
  const int64_t matrix = thread / k, column = thread % k;
  const T* t = triangle + matrix * n * n;
  T* b = x + matrix * n * k + column;
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = upper ? n - 1 - step : step;
    T value = b[i * k];
    const int64_t first = upper ? i + 1 : 0, last = upper ? n : i;
    for (int64_t j = first; j < last; ++j) value -= t[i * n + j] * b[j * k];
    b[i * k] = unit ? value : value / t[i * n + i];
  }
}

template <typename T>
__global__ void zero_strict_upper_kernel(T* matrices, int64_t count, int64_t n) {
  const int64_t element = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (element >= count * n * n) return;
  const int64_t row = element / n % n, column = element % n;
  if (column > row) matrices[element] = T(0);
}

unsigned blocks_for(int64_t threads) { return static_cast<unsigned>((threads + kThreads - 1) / kThreads); }

}  // namespace

int launch_triangular_solve(DType dtype, const void* triangle, void* x, int64_t count, int64_t n, int64_t k, bool upper,
                            bool unit, void* stream) {
  if (count * n * k == 0) return 0;
  const auto on = static_cast<cudaStream_t>(stream);
  if (static_cast<int>(dtype) == detail::kFloat64) {
    triangular_solve_kernel<double><<<blocks_for(count * k), kThreads, 0, on>>>(
        static_cast<const double*>(triangle), static_cast<double*>(x), count, n, k, upper, unit);
  } else {
    triangular_solve_kernel<float><<<blocks_for(count * k), kThreads, 0, on>>>(
        static_cast<const float*>(triangle), static_cast<float*>(x), count, n, k, upper, unit);
  }
  return static_cast<int>(cudaGetLastError());
}

int launch_zero_strict_upper(DType dtype, void* matrices, int64_t count, int64_t n, void* stream) {
  if (count * n * n == 0) return 0;
  const auto on = static_cast<cudaStream_t>(stream);
  if (static_cast<int>(dtype) == detail::kFloat64) {
    zero_strict_upper_kernel<double>
        <<<blocks_for(count * n * n), kThreads, 0, on>>>(static_cast<double*>(matrices), count, n);
  } else {
    zero_strict_upper_kernel<float>
        <<<blocks_for(count * n * n), kThreads, 0, on>>>(static_cast<float*>(matrices), count, n);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace ember::cuda
