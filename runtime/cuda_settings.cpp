// The CUDA backend's process-wide switches; see cuda_settings.h.
#include "runtime/cuda_settings.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace ember {

namespace {

// Read once, before the first GEMM asks: EMBER_ALLOW_TF32=1 (or true) enables TF32.
bool tf32_from_environment() {
  const char* value = std::getenv("EMBER_ALLOW_TF32");
  if (value == nullptr) return false;
  const std::string_view text(value);
  return text == "1" || text == "true" || text == "TRUE" || text == "on";
}

// Relaxed is enough: the flag orders nothing else, and a GEMM reads it once per call.
std::atomic<bool>& allow_tf32_flag() {
  static std::atomic<bool> flag{tf32_from_environment()};
  return flag;
}

}  // namespace

void set_allow_tf32(bool allow) { allow_tf32_flag().store(allow, std::memory_order_relaxed); }

bool get_allow_tf32() { return allow_tf32_flag().load(std::memory_order_relaxed); }

}  // namespace ember
