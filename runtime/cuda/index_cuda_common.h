// Helpers of the CUDA gather/scatter/one_hot and class-loss op files: reporting bad index and
// target values, and index tensors.
//
// Why values are not checked on the host: they live on the device, and checking them there would
// cost a device-to-host copy and a stream sync per op. The kernels instead never touch memory out
// of bounds (a bad index gathers zero or drops its contribution, a bad target gives NaN) and write
// the first bad value into the device's error record (runtime/cuda/device_error_report.h), which
// the next synchronization (ember::synchronize, to(kCPU), item()) raises as an ember::Error. With
// EMBER_CUDA_CHECK_INDICES=1 (or set_index_checking(true)) each op waits for its kernel (a sync)
// and raises the error itself, naming the op's shapes.
#pragma once

#include <optional>

#include "kernels/cuda/index.h"
#include "runtime/tensor.h"

namespace ember::cuda {

bool index_checking_enabled();
void set_index_checking(bool enabled);

// One op call's error site: the device's record, tagged with the op.
class IndexCheck {
 public:
  IndexCheck(Device device, DeviceErrorOp op);
  IndexFlag flag() const { return flag_; }
  // With checking on: waits for the current stream and returns this op's recorded error, if any
  // (an earlier op's error, reported asynchronously, is raised here as it would be at a sync).
  // With checking off: empty, the next synchronization reports.
  std::optional<DeviceErrorRecord> bad_index() const;

 private:
  Device device_;
  IndexFlag flag_;
};

// `index` as contiguous int64 or int32 values on its device: int32 stays int32 when `keep_int32`
// (the select and add kernels read both), otherwise it is widened.
Tensor dense_index(const Tensor& index, bool keep_int32);

// The launcher's dims for `tensor` (at most kMaxDims; a 0-d tensor has none).
int dims_of(const Tensor& tensor);

// PyTorch's split of a shape around `dim`: products of the sizes before and after it.
struct SplitDims {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};
SplitDims split_dims(const Dims& sizes, int dim);

}  // namespace ember::cuda
