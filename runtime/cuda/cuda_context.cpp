// Device discovery, guards, streams, events and error checks over the CUDA runtime API. The
// runtime is linked statically and loads the driver itself on first use, so on a machine without
// a driver or GPU every call here reports why instead of the program failing to start.
#include "runtime/cuda/cuda_context.h"

#include <cudaTypedefs.h>  // the driver's function types only: nothing from libcuda is linked
#include <cuda_runtime_api.h>

#include <array>
#include <mutex>

#include "runtime/cuda/copy_source_holds.h"
#include "runtime/cuda/cublaslt_library.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_error_report.h"
#include "runtime/error.h"

namespace ember::cuda {

void cuda_check(cudaError_t status, std::source_location where) {
  if (status == cudaSuccess) [[likely]] return;
  cudaGetLastError();  // clears a non-sticky error so the next call starts clean
  fail("CUDA error at {}:{}: {} ({})", where.file_name(), where.line(), cudaGetErrorString(status),
       cudaGetErrorName(status));
}

void cublas_check(cublasStatus_t status, std::source_location where) {
  if (status == CUBLAS_STATUS_SUCCESS) [[likely]] return;
  fail("cuBLAS error at {}:{}: {} (status {})", where.file_name(), where.line(),
       cublaslt().GetStatusString(status), static_cast<int>(status));
}

namespace {

struct Discovery {
  int count = 0;
  std::string why_not;
};

const Discovery& discovery() {
  static const Discovery found = [] {
    Discovery result;
    const cudaError_t status = cudaGetDeviceCount(&result.count);
    if (status != cudaSuccess) {
      result.count = 0;
      result.why_not = fmt::format("{} ({})", cudaGetErrorString(status), cudaGetErrorName(status));
      cudaGetLastError();
    } else if (result.count == 0) {
      result.why_not = "the CUDA runtime found no CUDA-capable device";
    }
    if (result.count > kMaxDevices) result.count = kMaxDevices;
    return result;
  }();
  return found;
}

// Streams current on this thread, one slot per device; null is the legacy default stream.
thread_local std::array<void*, kMaxDevices> current_streams{};

}  // namespace

int device_count(std::string* why_not) {
  const Discovery& found = discovery();
  if (why_not) *why_not = found.why_not;
  return found.count;
}

void check_device(Device device) {
  std::string why_not;
  const int count = device_count(&why_not);
  check(device.is_cuda(), "cuda: {} is not a CUDA device", device);
  check(count > 0, "cuda: {} is unavailable: {}", device, why_not);
  check(device.index >= 0 && device.index < count, "cuda: {} does not exist (this machine has {} CUDA device(s))",
        device, count);
}

namespace {

// Whether CUDA device `index` has an active primary context, asked without creating one, through
// the driver entry points the runtime hands out (ember never links libcuda). True when it cannot
// be asked, which keeps restore_device restoring.
bool has_primary_context(int index) noexcept {
  struct Driver {
    PFN_cuDeviceGet_v2000 device_get = nullptr;
    PFN_cuDevicePrimaryCtxGetState_v7000 primary_state = nullptr;
  };
  static const Driver driver = [] {
    Driver found;
    // The versions are those the two functions appeared in (their PFN_..._vNNNN types).
    auto lookup = [](const char* symbol, unsigned version) -> void* {
      void* function = nullptr;
      cudaDriverEntryPointQueryResult status{};
      const cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &function, version, cudaEnableDefault, &status);
      if (error != cudaSuccess) cudaGetLastError();  // leave no error of ours for a later check
      return error == cudaSuccess && status == cudaDriverEntryPointSuccess ? function : nullptr;
    };
    found.device_get = reinterpret_cast<PFN_cuDeviceGet_v2000>(lookup("cuDeviceGet", 2000));
    found.primary_state = reinterpret_cast<PFN_cuDevicePrimaryCtxGetState_v7000>(lookup("cuDevicePrimaryCtxGetState", 7000));
    return found;
  }();
  if (driver.device_get == nullptr || driver.primary_state == nullptr) return true;
  CUdevice device = 0;
  unsigned flags = 0;
  int active = 0;
  if (driver.device_get(&device, index) != CUDA_SUCCESS) return true;
  if (driver.primary_state(device, &flags, &active) != CUDA_SUCCESS) return true;
  return active != 0;
}

}  // namespace

Device context_device() {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    current = 0;
  }
  if (has_primary_context(current)) return Device(DeviceType::CUDA, current);
  for (int index = 0; index < device_count(); ++index)
    if (has_primary_context(index)) return Device(DeviceType::CUDA, index);
  return Device(DeviceType::CUDA, current);
}

DeviceGuard::DeviceGuard(Device device) {
  check_device(device);
  cuda_check(cudaGetDevice(&previous_));
  if (previous_ != device.index) cuda_check(cudaSetDevice(device.index));
}

void restore_device(int previous) noexcept {
  int now = -1;
  if (cudaGetDevice(&now) != cudaSuccess || now == previous || !has_primary_context(previous)) return;
  cudaSetDevice(previous);
}

DeviceGuard::~DeviceGuard() { restore_device(previous_); }

Stream Stream::create(Device device) {
  DeviceGuard guard(device);
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream{device, stream};
}

Stream Stream::from_pool(Device device) {
  check_device(device);
  struct Pool {
    std::array<void*, kPooledStreams> handles{};
    int next = 0;
  };
  static std::mutex mutex;
  static std::array<Pool, kMaxDevices> pools;
  const std::lock_guard lock(mutex);
  Pool& pool = pools[device.index];
  void*& handle = pool.handles[pool.next];
  pool.next = (pool.next + 1) % kPooledStreams;
  if (handle == nullptr) handle = create(device).handle;  // made on first use
  return Stream{device, handle};
}

Stream current_stream(Device device) {
  check_device(device);
  return Stream{device, current_streams[device.index]};
}

void set_current_stream(const Stream& stream) {
  check_device(stream.device);
  current_streams[stream.device.index] = stream.handle;
}

void copy_on_device(void* destination, const void* source, size_t bytes, const Stream& stream) {
  DeviceGuard guard(stream.device);
  cuda_check(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice,
                             static_cast<cudaStream_t>(stream.handle)));
}

void synchronize(Device device) {
  DeviceGuard guard(device);
  cuda_check(cudaDeviceSynchronize());
  release_copied_sources();    // every copy on this device has read its source now
  raise_device_error(device);  // a bad target or index a kernel found since the last sync
}

Event::Event(bool enable_timing) : enable_timing_(enable_timing) {
  std::string why_not;
  check(device_count(&why_not) > 0, "cuda: cannot create an event: {}", why_not);
}

Event::~Event() {
  if (handle_) cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
}

void Event::record(const Stream& stream) {
  DeviceGuard guard(stream.device);
  if (handle_ == nullptr) {
    cudaEvent_t event = nullptr;
    cuda_check(cudaEventCreateWithFlags(&event, enable_timing_ ? cudaEventDefault : cudaEventDisableTiming));
    handle_ = event;
    device_ = stream.device.index;
  }
  check(stream.device.index == device_, "cuda event: recorded on cuda:{} before, cannot be recorded on a stream of cuda:{}",
        device_, stream.device.index);
  cuda_check(cudaEventRecord(static_cast<cudaEvent_t>(handle_), static_cast<cudaStream_t>(stream.handle)));
}

// Not a device-error check point: events time ember's own benchmarks inside ops (layer_norm's
// auto choice), where an earlier op's error would surface in the wrong place. The error stays
// recorded for the next synchronize() or copy to the host.
void Event::synchronize() const {
  if (handle_ != nullptr) cuda_check(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)));
}

bool Event::query() const {
  if (handle_ == nullptr) return true;
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(handle_));
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  cuda_check(status);
  return true;
}

float Event::elapsed_milliseconds(const Event& later) const {
  check(handle_ != nullptr && later.handle_ != nullptr, "cuda event: elapsed time between events not both recorded");
  float milliseconds = 0.0f;
  cuda_check(cudaEventElapsedTime(&milliseconds, static_cast<cudaEvent_t>(handle_),
                                  static_cast<cudaEvent_t>(later.handle_)));
  return milliseconds;
}

}  // namespace ember::cuda
