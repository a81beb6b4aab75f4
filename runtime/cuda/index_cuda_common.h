// Helpers of the CUDA gather/scatter/one_hot op files: index checking and index tensors.
//
// Why indices are not checked by default on CUDA: their values live on the device, and checking
// them on the host would cost a device-to-host copy and a stream sync per op. The kernels instead
// never touch memory out of bounds (a bad index gathers zero or drops its contribution) and record
// one bad value in a two-word device flag. With EMBER_CUDA_CHECK_INDICES=1 (or
// set_index_checking(true)) each op allocates that flag, reads it back after its kernel (a sync)
// and throws the same kind of error as the CPU op. Without it, bad indices go unreported.
#pragma once

#include <optional>

#include "kernels/cuda/index.h"
#include "runtime/tensor.h"

namespace ember::cuda {

bool index_checking_enabled();
void set_index_checking(bool enabled);

// One op call's flag: zeroed on the device when checking is on, otherwise a null flag.
class IndexCheck {
 public:
  explicit IndexCheck(Device device);
  IndexFlag flag() const { return flag_; }
  // With checking on: waits for the stream and returns the recorded bad index, if any.
  std::optional<int64_t> bad_index() const;

 private:
  Tensor slot_;
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
