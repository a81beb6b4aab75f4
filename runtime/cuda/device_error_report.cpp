// Per-device error records in mapped pinned host memory, and raising them; see
// device_error_report.h. A record is allocated once per device and never freed (it lives as long
// as the process's CUDA context), so the steady state allocates nothing.
#include "runtime/cuda/device_error_report.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <mutex>
#include <new>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/device_error.h"
#include "runtime/error.h"

namespace ember::cuda {

namespace {

struct Record {
  DeviceErrorRecord* host = nullptr;    // the host's view
  DeviceErrorRecord* device = nullptr;  // what kernels are given
};

std::array<std::atomic<DeviceErrorRecord*>, kMaxDevices> host_records{};
std::array<DeviceErrorRecord*, kMaxDevices> device_records{};
std::mutex records_mutex;

Record record_of(Device device) {
  check(device.is_cuda() && device.index >= 0 && device.index < kMaxDevices,
        "cuda: no device error record for {}", device);
  if (DeviceErrorRecord* host = host_records[device.index].load(std::memory_order_acquire))
    return {host, device_records[device.index]};
  const std::lock_guard lock(records_mutex);
  if (DeviceErrorRecord* host = host_records[device.index].load(std::memory_order_acquire))
    return {host, device_records[device.index]};
  DeviceGuard guard(device);
  void* host = nullptr;
  cuda_check(cudaHostAlloc(&host, sizeof(DeviceErrorRecord), cudaHostAllocMapped | cudaHostAllocPortable));
  auto* typed = new (host) DeviceErrorRecord{};
  void* on_device = nullptr;
  cuda_check(cudaHostGetDevicePointer(&on_device, host, 0));
  device_records[device.index] = static_cast<DeviceErrorRecord*>(on_device);
  host_records[device.index].store(typed, std::memory_order_release);
  return {typed, device_records[device.index]};
}

}  // namespace

IndexFlag error_site(Device device, DeviceErrorOp op) { return {record_of(device).device, op}; }

void prepare_error_record(Device device) { record_of(device); }

std::optional<DeviceErrorRecord> take_device_error(Device device) {
  if (!device.is_cuda() || device.index < 0 || device.index >= kMaxDevices) return std::nullopt;
  DeviceErrorRecord* host = host_records[device.index].load(std::memory_order_acquire);
  if (host == nullptr) return std::nullopt;  // no kernel was ever given this device's record
  const std::lock_guard lock(records_mutex);
  return take_device_error(*host);
}

void raise_device_error(Device device, bool at_synchronization) {
  if (const std::optional<DeviceErrorRecord> error = take_device_error(device))
    fail("{}", describe_device_error(*error, at_synchronization));
}

}  // namespace ember::cuda
