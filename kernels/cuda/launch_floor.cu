// See launch_floor.h.
#include <cuda_runtime_api.h>

#include "kernels/cuda/launch_floor.h"

namespace ember::cuda {

namespace {

__global__ void empty_kernel() {}

}  // namespace

int launch_empty_kernel(void* stream) {
  empty_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>();
  return static_cast<int>(cudaGetLastError());
}

}  // namespace ember::cuda
