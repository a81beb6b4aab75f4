// Storage lifetime: allocator-backed or caller-owned memory.
#include "runtime/memory/storage.h"

#include <utility>

#include "runtime/memory/memory_stats.h"

#include "runtime/error.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_graph.h"
#endif

namespace ember {

CachingAllocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    // One CPU device, as in PyTorch: a tensor on "cpu:1" would print as cpu and still be refused
    // beside every other CPU tensor ("expected all tensors on one device, got cpu and cpu").
    check(device.index == 0, "allocator: the CPU device index must be 0, got {}", device.index);
    return cpu_allocator();
  }
#ifdef EMBER_HAS_CUDA
  return cuda::device_allocator(device.index);
#else
  std::string why_not;
  cuda_is_available(&why_not);
  fail("allocator: device {} is unavailable: {}", device, why_not);
#endif
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  CachingAllocator& allocator = allocator_for(device);
  StreamId stream = 0;
#ifdef EMBER_HAS_CUDA
  // CUDA blocks belong to the stream current at allocation: only that stream reuses them (or,
  // under a CUDA-graph capture, to the graphs captured on it).
  if (device.is_cuda()) stream = cuda::allocation_pool(device);
#endif
  return std::make_shared<Storage>(allocator.allocate(nbytes, stream), nbytes, device, &allocator, nullptr);
}

std::shared_ptr<Storage> Storage::allocate_pinned(size_t nbytes) {
#ifdef EMBER_HAS_CUDA
  CachingAllocator& allocator = cuda::pinned_allocator();
  return std::make_shared<Storage>(allocator.allocate(nbytes, 0), nbytes, kCPU, &allocator, nullptr);
#else
  std::string why_not;
  cuda_is_available(&why_not);
  fail("pinned host memory needs a CUDA device: {}", why_not);
#endif
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  return std::make_shared<Storage>(CachingAllocator::Allocation{data, nullptr}, nbytes, device, nullptr,
                                   std::move(deleter));
}

void Storage::swap_memory(Storage& other) {
  check(device_ == other.device_, "Storage::swap_memory: buffers on {} and {}", device_, other.device_);
  std::swap(allocation_, other.allocation_);
  std::swap(nbytes_, other.nbytes_);
  std::swap(allocator_, other.allocator_);
  std::swap(deleter_, other.deleter_);
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
