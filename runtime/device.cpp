// Device parsing and the default-device rule.
#include "runtime/device.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "runtime/error.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#endif

namespace ember {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return kCPU;
  if (text == "cuda") return Device(DeviceType::CUDA, 0);
  if (text.rfind("cuda:", 0) == 0) {
    // Digits only, no sign, space or leading zero (PyTorch's rule): "cuda: 1" or "cuda:01" is
    // more likely a typo than a request for device 1.
    const std::string_view number = std::string_view(text).substr(5);
    int index = -1;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), index);
    const bool digits_only = !number.empty() && std::isdigit(static_cast<unsigned char>(number[0]));
    const bool leading_zero = number.size() > 1 && number[0] == '0';
    if (digits_only && !leading_zero && error == std::errc() && end == number.data() + number.size() && index < 1024)
      return Device(DeviceType::CUDA, index);
  }
  fail("device: cannot parse '{}' (expected cpu, cuda or cuda:N)", text);
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index);
}

bool cuda_is_available(std::string* why_not) {
#ifdef EMBER_HAS_CUDA
  // Asks the CUDA runtime once per process (cudaGetDeviceCount); the reason is its error string.
  return cuda::device_count(why_not) > 0;
#else
  if (why_not) *why_not = "this build of ember has no CUDA backend (configured with EMBER_WITH_CUDA=OFF "
                          "or without a CUDA toolkit)";
  return false;
#endif
}

Device default_device() {
  if (const char* forced = std::getenv("EMBER_DEVICE")) {
    Device device = Device::parse(forced);
    std::string why_not;
    check(!device.is_cuda() || cuda_is_available(&why_not),
          "EMBER_DEVICE={} asks for CUDA, which is unavailable: {}", forced, why_not);
#ifdef EMBER_HAS_CUDA
    if (device.is_cuda()) cuda::check_device(device);  // cuda:N beyond the device count
#endif
    return device;
  }
  return cuda_is_available() ? Device(DeviceType::CUDA, 0) : kCPU;
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
#ifdef EMBER_HAS_CUDA
  cuda::synchronize(device);
#else
  fail("synchronize: {} is not available: {}", device, [] { std::string why; cuda_is_available(&why); return why; }());
#endif
}

}  // namespace ember
