// Index checking and index tensors for the CUDA gather/scatter ops; see index_cuda_common.h.
#include "runtime/cuda/index_cuda_common.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/device_error_report.h"
#include "runtime/device_error.h"

namespace ember::cuda {

namespace {

std::atomic<bool>& checking() {
  static std::atomic<bool> enabled = [] {
    const char* value = std::getenv("EMBER_CUDA_CHECK_INDICES");
    return value != nullptr && std::strcmp(value, "0") != 0 && value[0] != '\0';
  }();
  return enabled;
}

}  // namespace

bool index_checking_enabled() { return checking().load(std::memory_order_relaxed); }
void set_index_checking(bool enabled) { checking().store(enabled, std::memory_order_relaxed); }

IndexCheck::IndexCheck(Device device, DeviceErrorOp op) : device_(device), flag_(error_site(device, op)) {}

std::optional<DeviceErrorRecord> IndexCheck::bad_index() const {
  if (!index_checking_enabled()) return std::nullopt;
  const auto stream = static_cast<cudaStream_t>(current_stream(device_).handle);
  // Under CUDA-graph capture nothing ran yet and a sync would invalidate the capture: the
  // replays report through the device's record at the next synchronization instead.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return std::nullopt;
  cuda_check(cudaStreamSynchronize(stream));  // EMBER_CUDA_CHECK_INDICES: the op reports its own error
  std::optional<DeviceErrorRecord> error = take_device_error(device_);
  if (error && error->op != static_cast<int32_t>(flag_.op)) fail("{}", describe_device_error(*error, true));
  return error;
}

Tensor dense_index(const Tensor& index, bool keep_int32) {
  const DType dtype = keep_int32 && index.dtype() == kInt32 ? kInt32 : kInt64;
  return contiguous_on_device(as_dtype(index, dtype));
}

int dims_of(const Tensor& tensor) {
  check(tensor.dim() <= kMaxDims, "cuda: tensors of more than {} dims are not supported yet (got {})", kMaxDims,
        tensor.dim());
  return static_cast<int>(tensor.dim());
}

SplitDims split_dims(const Dims& sizes, int dim) {
  SplitDims split;
  if (sizes.empty()) return split;
  for (int d = 0; d < dim; ++d) split.outer *= sizes[d];
  split.size = sizes[dim];
  for (int d = dim + 1; d < static_cast<int>(sizes.size()); ++d) split.inner *= sizes[d];
  return split;
}

}  // namespace ember::cuda
