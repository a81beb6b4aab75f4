// Device = CPU | CUDA:n. The default device is the first usable CUDA device, else the CPU;
// EMBER_DEVICE=cpu|cuda|cuda:N overrides it.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace ember {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType device_type, int device_index = 0)  // NOLINT: Device(kCPU) reads well
      : type(device_type), index(device_index) {}
  // Parses "cpu", "cuda", "cuda:1"; throws ember::Error on anything else.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;

  friend bool operator==(const Device&, const Device&) = default;
};

constexpr Device kCPU{DeviceType::CPU, 0};

// The device new tensors go to when none is named: EMBER_DEVICE if set, else the first usable CUDA
// device, else the CPU.
Device default_device();

// True when a CUDA backend is compiled in and a device is usable. `why_not` says why not.
bool cuda_is_available(std::string* why_not = nullptr);

// Waits until all work queued on `device` has finished (a no-op on the CPU, whose ops finish
// before they return). Timing a CUDA step needs it: kernel launches return before the work ends.
void synchronize(Device device);

}  // namespace ember

template <>
struct fmt::formatter<ember::Device> : fmt::formatter<std::string_view> {
  auto format(const ember::Device& device, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(device.str(), ctx);
  }
};
