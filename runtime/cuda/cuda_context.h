// The CUDA runtime as ember sees it: which devices exist (and why none do), a device guard, the
// current stream of each device, events, and the per-device and pinned-host caching allocators.
// The header includes no CUDA header: streams and events are opaque handles, so code that only
// moves tensors between devices compiles without the toolkit's include path.
#pragma once

#include <string>

#include "runtime/device.h"
#include "runtime/memory/caching_allocator.h"

namespace ember::cuda {

// Device indices ember keeps per-device state (streams, pools, handles) for.
constexpr int kMaxDevices = 64;

// Number of usable CUDA devices; 0 with `why_not` set to the CUDA runtime's reason (e.g. no driver,
// no device). Asks the runtime once per process and remembers the answer.
int device_count(std::string* why_not = nullptr);

// Throws ember::Error naming `device` and the reason when it is not a usable CUDA device.
void check_device(Device device);

// A device for calls that need a context but no particular device (pinned host memory, pointer
// queries): the current device when its primary context is alive, else the first device whose
// context is, else the current device. A DataLoader's pinning thread never chose a device and
// reports device 0; allocating there would create GPU 0's context in every rank's process.
Device context_device();

// Makes device `previous` current again on this thread, unless it already is or has no primary
// context: a thread that never chose a device reports device 0, and making it current would create
// its context (hundreds of MiB; with one process per GPU, every rank would hold one on GPU 0).
// Like PyTorch's guard, the current device then stays. Errors are ignored (used by destructors).
void restore_device(int previous) noexcept;

// Makes `device` current on this thread for the guard's lifetime, restoring the previous one
// unless that one has no context (a thread that never chose a device reports device 0).
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// A CUDA stream on one device. The null handle is the device's legacy default stream.
struct Stream {
  Device device{DeviceType::CUDA, 0};
  void* handle = nullptr;  // cudaStream_t

  StreamId id() const { return reinterpret_cast<StreamId>(handle); }
  // A side stream for user work: one of kPooledStreams non-blocking streams of `device`, handed
  // out in turn (libtorch's getStreamFromPool). Streams live for the process, and each one used
  // gets its own cuBLASLt workspace and cached blocks, so a program that takes a stream per
  // iteration must reuse a few rather than make new ones. Two calls may return the same stream,
  // which only orders their work more (a stream one thread captures into a CUDA graph must not be
  // used by another meanwhile: capture on a stream of your own, Stream::create).
  static Stream from_pool(Device device);
  static constexpr int kPooledStreams = 32;
  // A new non-blocking stream of its own, never shared with from_pool's and never destroyed: for
  // the runtime's dedicated streams (the CUDA-graph capture stream), made once each.
  static Stream create(Device device);
};

// The stream kernels on `device` are launched on from this thread.
Stream current_stream(Device device);
void set_current_stream(const Stream& stream);

// Makes `stream` its device's current stream on this thread for the guard's lifetime, restoring
// the previous one (libtorch's CUDAStreamGuard).
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream) : previous_(current_stream(stream.device)) { set_current_stream(stream); }
  ~StreamGuard() { set_current_stream(previous_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// Queues a copy of `bytes` between two allocations of `stream`'s device.
void copy_on_device(void* destination, const void* source, size_t bytes, const Stream& stream);

// Waits for all work on `device` (every stream).
void synchronize(Device device);

// A CUDA event: record it on a stream, wait for it from the host, or time between two events.
// It is made on the device of the first stream it is recorded on (as CUDA requires of every later
// record too), not on whichever device was current when the Event was constructed. Before its
// first record it counts as finished.
class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void synchronize() const;
  bool query() const;  // true when the recorded work has finished
  float elapsed_milliseconds(const Event& later) const;
  void* handle() const { return handle_; }  // cudaEvent_t; null before the first record

 private:
  bool enable_timing_ = false;
  int device_ = -1;         // the device of its streams, once recorded
  void* handle_ = nullptr;  // cudaEvent_t
};

// The caching allocator of CUDA device `index` (memory from cudaMalloc).
CachingAllocator& device_allocator(int index);
// Page-locked host memory (cudaHostAlloc) for staging copies that may run asynchronously.
CachingAllocator& pinned_allocator();
// True when `pointer` lies in page-locked host memory, so an async copy from it is safe.
bool is_pinned(const void* pointer);
// Throws ember::Error naming `op` unless `pointer` is memory of CUDA device `device` (or managed
// memory): a host address wrapped as a device tensor would make kernels fault, which ends the
// process's CUDA context for every later call.
void check_device_pointer(const void* pointer, Device device, const char* op);

}  // namespace ember::cuda
