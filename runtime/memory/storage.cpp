// Storage lifetime: allocator-backed or caller-owned memory.
#include "runtime/memory/storage.h"

#include "runtime/error.h"

namespace ember {

CachingAllocator& allocator_for(Device device) {
  check(device.is_cpu(), "allocator: device {} is not available in this build", device);
  return cpu_allocator();
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  CachingAllocator& allocator = allocator_for(device);
  void* data = allocator.allocate(nbytes);
  return std::make_shared<Storage>(data, nbytes, device, &allocator, nullptr);
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  return std::make_shared<Storage>(data, nbytes, device, nullptr, std::move(deleter));
}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    allocator_->free(data_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace ember
