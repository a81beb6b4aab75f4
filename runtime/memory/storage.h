// Storage: the bytes behind one or more tensors (a tensor and its views share one Storage).
// It also carries the version counter that in-place ops bump, so autograd can tell when a tensor
// it saved for backward was modified.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/device.h"
#include "runtime/memory/caching_allocator.h"

namespace ember {

class Storage {
 public:
  // Memory from the device's caching allocator.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  // Page-locked host memory from the pinned caching allocator (CUDA builds with a device; fails
  // naming why otherwise): copies from it to a GPU can run asynchronously.
  static std::shared_ptr<Storage> allocate_pinned(size_t nbytes);
  // Memory the caller owns; `deleter` (may be empty) runs when the last tensor lets go.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter);

  Storage(CachingAllocator::Allocation allocation, size_t nbytes, Device device,
          CachingAllocator* allocator, std::function<void(void*)> deleter)
      : allocation_(allocation), nbytes_(nbytes), device_(device), allocator_(allocator),
        deleter_(std::move(deleter)) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return allocation_.pointer; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Exchanges the memory (and who frees it) with `other`, keeping each one's version counter: a
  // compiled segment's fresh output buffer becomes the memory of the tensor it computed, and the
  // views of that tensor see it (graph/segments.h). Both must be on one device.
  void swap_memory(Storage& other);

  // Work queued on `stream` uses this memory: freeing it waits for that work (see
  // CachingAllocator::record_stream). Memory the caller owns (wrap) is the caller's to keep alive.
  void record_stream(StreamId stream) const {
    if (allocator_ != nullptr) allocator_->record_stream(allocation_, stream);
  }

  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  CachingAllocator::Allocation allocation_;
  size_t nbytes_;
  Device device_;
  CachingAllocator* allocator_;  // null for wrapped memory
  std::function<void(void*)> deleter_;
  uint64_t version_ = 0;
};

// The caching allocator of a device (CPU now; CUDA devices register theirs with the backend).
CachingAllocator& allocator_for(Device device);

}  // namespace ember
