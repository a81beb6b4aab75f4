// Per-thread library handles (cuBLASLt, cuDNN) that outlive their threads. A handle must never be
// used by two threads at once, so each thread has its own per device; when a thread exits, its
// handles go back to a process-wide pool and the next new thread takes one from there, instead of
// every thread that ever ran a GEMM leaving a handle (and the device memory it holds) behind, as
// libtorch's DeviceThreadHandlePool does. Handles are never destroyed: at process exit the
// library or the CUDA runtime may already be gone. Header-only and library-free, so the pooling
// is tested on the CPU with stand-in handles.
#pragma once

#include <array>
#include <mutex>
#include <vector>

#include "runtime/cuda/cuda_context.h"  // kMaxDevices; includes no CUDA header
#include "runtime/error.h"

namespace ember::cuda {

template <typename Handle>
class ThreadHandlePool {
 public:
  using Create = Handle (*)(int device);

  // The pool of `create`'s handles, one per (Handle, create) pair for the process, never
  // destroyed (threads may exit, and give their handles back, during static destruction).
  static ThreadHandlePool& of(Create create) {
    static auto* pool = new ThreadHandlePool(create);
    internal_assert(pool->create_ == create, "ThreadHandlePool: one create function per handle type");
    return *pool;
  }

  // This thread's handle for `device`: the one it has, else one an exited thread gave back, else
  // (when `create`) a new one; null when there is none and `create` is false.
  Handle for_this_thread(int device, bool create = true) {
    check(device >= 0 && device < kMaxDevices, "ThreadHandlePool: device index {} out of range", device);
    Handle& mine = owned().handles[static_cast<size_t>(device)];
    if (mine != Handle{}) return mine;
    {
      const std::lock_guard lock(mutex_);
      std::vector<Handle>& spare = spare_[static_cast<size_t>(device)];
      if (!spare.empty()) {
        mine = spare.back();
        spare.pop_back();
        return mine;
      }
    }
    if (create) mine = create_(device);
    return mine;
  }

  // Handles given back by exited threads and not taken again, for tests.
  size_t spare_count(int device) {
    const std::lock_guard lock(mutex_);
    return spare_[static_cast<size_t>(device)].size();
  }

 private:
  explicit ThreadHandlePool(Create create) : create_(create) {}

  // One thread's handles; its destructor (at thread exit) gives them back.
  struct Owned {
    ThreadHandlePool* pool = nullptr;
    std::array<Handle, kMaxDevices> handles{};
    ~Owned() {
      const std::lock_guard lock(pool->mutex_);
      for (size_t device = 0; device < handles.size(); ++device)
        if (handles[device] != Handle{}) pool->spare_[device].push_back(handles[device]);
    }
  };
  Owned& owned() {
    thread_local Owned mine{this};
    return mine;
  }

  Create create_;
  std::mutex mutex_;
  std::array<std::vector<Handle>, kMaxDevices> spare_;
};

}  // namespace ember::cuda
