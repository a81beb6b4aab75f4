// The cuSOLVER kernels' shared helpers; see linalg_cuda_common.h.
#include "runtime/cuda/linalg_cuda_common.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_graph.h"
#include "runtime/error.h"

namespace ember::cuda {

cudaDataType data_type_of(DType dtype) { return dtype == kFloat64 ? CUDA_R_64F : CUDA_R_32F; }

Tensor device_workspace(size_t bytes, Device device) {
  return make_tensor({std::max<int64_t>(static_cast<int64_t>((bytes + 7) / 8), 1)}, kInt64, device);
}

int64_t matrix_count(const Tensor& tensor) {
  int64_t count = 1;
  for (int d = 0; d + 2 < tensor.dim(); ++d) count *= tensor.sizes()[d];
  return count;
}

std::vector<int> read_infos(const Tensor& info, int64_t count, void* stream, const char* op) {
  check(!capturing_on_this_thread(),
        "{}: reads cuSOLVER's status on the host (to report a singular or failed matrix), which a CUDA "
        "graph capture cannot do; run it outside mode=reduce_overhead",
        op);
  std::vector<int> infos(static_cast<size_t>(count));
  if (count == 0) return infos;
  const auto on = static_cast<cudaStream_t>(stream);
  cuda_check(cudaMemcpyAsync(infos.data(), info.raw_data_ptr(), count * sizeof(int), cudaMemcpyDeviceToHost, on));
  cuda_check(cudaStreamSynchronize(on));
  return infos;
}

}  // namespace ember::cuda
