// Storage lifetime: allocator-backed or caller-owned memory.
#include "runtime/memory/storage.h"

#include "runtime/memory/memory_stats.h"

#include "runtime/error.h"

namespace ember {

CachingAllocator& allocator_for(Device device) {
  check(device.is_cpu(), "allocator: device {} is not available in this build", device);
  return cpu_allocator();
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  CachingAllocator& allocator = allocator_for(device);
  return std::make_shared<Storage>(allocator.allocate(nbytes), nbytes, device, &allocator, nullptr);
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  return std::make_shared<Storage>(CachingAllocator::Allocation{data, nullptr}, nbytes, device, nullptr,
                                   std::move(deleter));
}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    allocator_->free(allocation_);
  } else if (deleter_) {
    deleter_(allocation_.pointer);
  }
}

}  // namespace ember

namespace ember {

MemoryStats memory_stats(Device device) { return allocator_for(device).stats(); }
void reset_peak_memory_stats(Device device) { allocator_for(device).reset_peak_stats(); }
void empty_cache(Device device) { allocator_for(device).empty_cache(); }

}  // namespace ember
