// Index checking and index tensors for the CUDA gather/scatter ops; see index_cuda_common.h.
#include "runtime/cuda/index_cuda_common.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"

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

IndexCheck::IndexCheck(Device device) {
  if (!index_checking_enabled()) return;
  slot_ = make_tensor({2}, kInt64, device);
  cuda_check(cudaMemsetAsync(slot_.raw_data_ptr(), 0, slot_.nbytes(), static_cast<cudaStream_t>(stream_of(slot_))));
  flag_.slot = static_cast<unsigned long long*>(slot_.raw_data_ptr());
}

std::optional<int64_t> IndexCheck::bad_index() const {
  if (flag_.slot == nullptr) return std::nullopt;
  unsigned long long host[2] = {};
  const auto stream = static_cast<cudaStream_t>(stream_of(slot_));
  cuda_check(cudaMemcpyAsync(host, flag_.slot, sizeof host, cudaMemcpyDeviceToHost, stream));
  cuda_check(cudaStreamSynchronize(stream));  // the host reads the flag right away
  if (host[0] == 0) return std::nullopt;
  return static_cast<int64_t>(host[1]);
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
