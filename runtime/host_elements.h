// host_elements<T>: a tensor's values in row-major order as a host vector, read through host_values
// so the dispatcher's modes hear of the read (the ops of runtime/functional_select.h size results so).
#pragma once

#include <vector>

#include "runtime/dispatch.h"
#include "runtime/tensor.h"

namespace ember::detail {

// T must be the C++ type of tensor's dtype (dispatch_dtype gives it). `what` names the reader in a
// capture's graph break ("nonzero", "unique").
template <typename T>
std::vector<T> host_elements(const char* what, const Tensor& tensor) {
  const Tensor host = host_values(what, tensor, /*dense=*/true);
  const T* data = static_cast<const T*>(host.raw_data_ptr());
  return std::vector<T>(data, data + host.numel());
}

// The same converted to int64 (for int32 and int64 index tensors).
inline std::vector<int64_t> host_int64(const char* what, const Tensor& tensor) {
  if (tensor.dtype() == kInt32) {
    const std::vector<int32_t> narrow = host_elements<int32_t>(what, tensor);
    return std::vector<int64_t>(narrow.begin(), narrow.end());
  }
  internal_assert(tensor.dtype() == kInt64, "host_int64 reads int32 or int64 tensors");
  return host_elements<int64_t>(what, tensor);
}

}  // namespace ember::detail
