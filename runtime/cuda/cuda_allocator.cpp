// The CUDA memory backends under the device-independent caching allocator: one pool per device
// over cudaMalloc/cudaFree, and one pool of page-locked host memory (cudaHostAlloc) for staging.
#include <cuda_runtime_api.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_graph.h"
#include "runtime/error.h"

namespace ember::cuda {

namespace {

class DeviceMemoryBackend final : public MemoryBackend {
 public:
  explicit DeviceMemoryBackend(int index) : index_(index) {}

  // nullptr on out-of-memory lets the pool empty its cache and retry; other errors throw.
  void* allocate(size_t bytes) override {
    DeviceGuard guard(Device(DeviceType::CUDA, index_));
    void* pointer = nullptr;
    cudaError_t status = cudaSuccess;
    if (capturing_on_this_thread()) {
      // A ThreadLocal capture prohibits cudaMalloc on this thread (cudaErrorStreamCaptureUnsupported,
      // and the capture is invalidated). The call is safe here: the segment is never cudaFree'd
      // while a graph may address it (retain_stream, can_release), as PyTorch's allocator does.
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      cuda_check(cudaThreadExchangeStreamCaptureMode(&mode));
      status = cudaMalloc(&pointer, bytes);
      cuda_check(cudaThreadExchangeStreamCaptureMode(&mode));
    } else {
      status = cudaMalloc(&pointer, bytes);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    cuda_check(status);
    return pointer;
  }
  void release(void* pointer, size_t) override {
    DeviceGuard guard(Device(DeviceType::CUDA, index_));
    // A cached block returns to the pool when its tensor dies on the host, perhaps while kernels
    // queued earlier still use it; cudaFree "may" synchronize (CUDA's words), so wait explicitly.
    // Releasing is rare (empty_cache, an out-of-memory retry) and costs a sync anyway.
    cuda_check(cudaDeviceSynchronize());
    cuda_check(cudaFree(pointer));
  }
  // cudaFree and the sync before it wait for the whole device: illegal while any thread captures
  // a graph there (it would invalidate the capture), and on a thread that captures at all
  // (thread-local capture mode). The cache keeps its segments meanwhile.
  bool can_release() const override { return !capturing_on_this_thread() && !capture_running_on(index_); }
  const char* name() const override { return "cuda"; }

  // Markers for record_stream. None is made while a capture could swallow it: an event recorded
  // into a capturing stream becomes a graph node, and querying it fails; the allocator retries.
  void* record_event(StreamId stream) override {
    if (capturing_on_this_thread()) return nullptr;
    // The stream's device current: the legacy stream (handle 0) is the current device's, and an
    // event must be made on its stream's device.
    DeviceGuard guard(Device(DeviceType::CUDA, index_));
    cudaStream_t handle = reinterpret_cast<cudaStream_t>(stream);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cuda_check(cudaStreamIsCapturing(handle, &capture));
    if (capture != cudaStreamCaptureStatusNone) return nullptr;
    cudaEvent_t event = nullptr;
    if (spare_events_.empty()) {
      cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    } else {
      event = spare_events_.back();
      spare_events_.pop_back();
    }
    if (const cudaError_t status = cudaEventRecord(event, handle); status != cudaSuccess) {
      spare_events_.push_back(event);  // not lost: the error is reported, the event kept
      cuda_check(status);
    }
    return event;
  }
  bool event_done(void* event) override {
    if (capturing_on_this_thread()) return false;  // a query may be illegal during the capture
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      cudaGetLastError();  // not an error: leave nothing for the next cuda_check to find
      return false;
    }
    cuda_check(status);
    return true;
  }
  void wait_event(void* event) override { cuda_check(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }
  // Kept for the next marker: creating an event is a driver call. The allocator's lock guards it.
  void destroy_event(void* event) override { spare_events_.push_back(static_cast<cudaEvent_t>(event)); }

 private:
  int index_;
  std::vector<cudaEvent_t> spare_events_;
};

class PinnedMemoryBackend final : public MemoryBackend {
 public:
  // Host memory belongs to no device, but the calls need a context: one that is alive already.
  void* allocate(size_t bytes) override {
    DeviceGuard guard(context_device());
    void* pointer = nullptr;
    const cudaError_t status = cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    cuda_check(status);
    return pointer;
  }
  void release(void* pointer, size_t) override {
    DeviceGuard guard(context_device());
    cuda_check(cudaFreeHost(pointer));
  }
  // cudaFreeHost synchronizes: not while a graph is being captured on any device.
  bool can_release() const override { return !capturing_on_this_thread() && !capture_running_anywhere(); }
  const char* name() const override { return "cuda pinned host"; }
};

// EMBER_NO_CUDA_MEMORY_CACHING=1 (PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING): every tensor its own
// cudaMalloc, freed at once, so compute-sanitizer's memcheck sees its bounds (tools/gpu_check.sh).
bool caching_from_env() {
  const char* value = std::getenv("EMBER_NO_CUDA_MEMORY_CACHING");
  return value == nullptr || std::string(value) != "1";
}

struct DevicePool {
  DeviceMemoryBackend backend;
  CachingAllocator allocator;
  explicit DevicePool(int index) : backend(index), allocator(backend, caching_from_env()) {}
};

}  // namespace

// Pools are created on first use and live until exit; their memory is returned to the driver by
// process teardown, not by destructors racing the CUDA runtime's own shutdown.
CachingAllocator& device_allocator(int index) {
  check_device(Device(DeviceType::CUDA, index));
  static std::array<DevicePool*, kMaxDevices> pools{};
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (pools[index] == nullptr) pools[index] = new DevicePool(index);
  return pools[index]->allocator;
}

CachingAllocator& pinned_allocator() {
  std::string why_not;
  check(device_count(&why_not) > 0, "cuda: pinned host memory needs a CUDA device: {}", why_not);
  static PinnedMemoryBackend* backend = new PinnedMemoryBackend();
  static CachingAllocator* allocator = new CachingAllocator(*backend);
  return *allocator;
}

bool is_pinned(const void* pointer) {
  if (device_count() == 0) return false;
  DeviceGuard guard(context_device());
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

void check_device_pointer(const void* pointer, Device device, const char* op) {
  check_device(device);
  DeviceGuard guard(device);
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) cudaGetLastError();
  const bool on_device = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  check(on_device, "{}: pointer {} is not {} memory (it is {} memory); a kernel reading it would fault", op, pointer,
        device, attributes.type == cudaMemoryTypeHost ? "pinned host" : "pageable host");
  // Managed memory reports the device it was allocated on; any device may read it.
  check(attributes.type == cudaMemoryTypeManaged || attributes.device == device.index,
        "{}: pointer {} lies on cuda:{}, not on {}", op, pointer, attributes.device, device);
}

}  // namespace ember::cuda
