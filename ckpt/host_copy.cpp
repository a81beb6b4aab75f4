// Strided byte copies: a contiguous fast path, else an odometer over the dims with the innermost
// dim copied element by element.
#include "ckpt/host_copy.h"

#include <cstring>

#include "runtime/dispatch.h"
#include "runtime/memory/storage.h"

namespace ember::ckpt {

namespace {

// Calls visit(byte_offset_in_tensor_storage, flat_index) for every element in row-major order.
template <typename Visit>
void for_each_element(const Tensor& tensor, Visit visit) {
  const Dims& sizes = tensor.sizes();
  const Dims& strides = tensor.strides();
  const int64_t numel = tensor.numel();
  const int64_t element = static_cast<int64_t>(tensor.element_size());
  Dims index = Dims::filled(sizes.size(), 0);
  int64_t offset = 0;  // in elements, relative to the tensor's first element
  for (int64_t flat = 0; flat < numel; ++flat) {
    visit(offset * element, flat * element);
    for (int dim = sizes.size() - 1; dim >= 0; --dim) {
      if (++index[dim] < sizes[dim]) {
        offset += strides[dim];
        break;
      }
      offset -= strides[dim] * (sizes[dim] - 1);
      index[dim] = 0;
    }
  }
}

}  // namespace

void gather_bytes(const Tensor& source, std::byte* destination) {
  if (source.numel() == 0) return;
  if (!source.device().is_cpu()) {
    NoGradGuard no_grad;
    gather_bytes(source.to(kCPU), destination);
    return;
  }
  const auto* base = static_cast<const std::byte*>(source.raw_data_ptr());
  if (source.is_contiguous()) {
    std::memcpy(destination, base, source.nbytes());
    return;
  }
  const size_t element = source.element_size();
  for_each_element(source, [&](int64_t from, int64_t to) {
    std::memcpy(destination + to, base + from, element);
  });
}

void scatter_bytes(const std::byte* source, const Tensor& destination) {
  if (!destination.device().is_cpu()) {
    Tensor host = make_tensor(destination.sizes(), destination.dtype(), kCPU);
    if (host.numel() > 0) std::memcpy(host.raw_data_ptr(), source, host.nbytes());
    NoGradGuard no_grad;
    Tensor(destination).copy_(host);  // a device copy moves bytes unchanged
    return;
  }
  if (destination.numel() > 0) {
    auto* base = static_cast<std::byte*>(destination.raw_data_ptr());
    if (destination.is_contiguous()) {
      std::memcpy(base, source, destination.nbytes());
    } else {
      const size_t element = destination.element_size();
      for_each_element(destination, [&](int64_t to, int64_t from) {
        std::memcpy(base + to, source + from, element);
      });
    }
  }
  destination.impl()->storage->bump_version();
}

int64_t first_invalid_bool(const std::byte* data, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i)
    if (std::to_integer<unsigned>(data[i]) > 1u) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace ember::ckpt
