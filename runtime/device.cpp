// Device parsing and the default-device rule.
#include "runtime/device.h"

#include <cstdlib>

#include "runtime/error.h"

namespace ember {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return kCPU;
  if (text == "cuda") return Device(DeviceType::CUDA, 0);
  if (text.rfind("cuda:", 0) == 0) {
    const std::string number = text.substr(5);
    char* end = nullptr;
    long index = std::strtol(number.c_str(), &end, 10);
    if (!number.empty() && *end == '\0' && index >= 0 && index < 1024)
      return Device(DeviceType::CUDA, static_cast<int>(index));
  }
  fail("device: cannot parse '{}' (expected cpu, cuda or cuda:N)", text);
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index);
}

bool cuda_is_available(std::string* why_not) {
  // The CUDA backend is not built yet (the CUDA issue adds it); until then CPU is the only device.
  if (why_not) *why_not = "this build of ember has no CUDA backend";
  return false;
}

Device default_device() {
  if (const char* forced = std::getenv("EMBER_DEVICE")) {
    Device device = Device::parse(forced);
    std::string why_not;
    check(!device.is_cuda() || cuda_is_available(&why_not),
          "EMBER_DEVICE={} asks for CUDA, which is unavailable: {}", forced, why_not);
    return device;
  }
  return cuda_is_available() ? Device(DeviceType::CUDA, 0) : kCPU;
}

}  // namespace ember
