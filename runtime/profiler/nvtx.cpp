// NVTX ranges for dispatched ops; see nvtx.h. With the CUDA toolkit the ranges go to NVTX 3
// (header-only; it forwards to a profiler that injected itself, e.g. Nsight Systems); without it
// they are counted only, so the switch and its tests behave the same on every build.
#include "runtime/profiler/nvtx.h"

#include <cstdlib>
#include <cstring>

#ifdef EMBER_HAS_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace ember::profiler {

namespace {
bool env_enabled() {
  const char* value = std::getenv("EMBER_NVTX");
  return value != nullptr && std::strcmp(value, "0") != 0 && value[0] != '\0';
}
std::atomic<int64_t> ranges_pushed{0};
}  // namespace

namespace detail {
std::atomic<bool> nvtx_on{env_enabled()};

void nvtx_push(const char* name) {
  ranges_pushed.fetch_add(1, std::memory_order_relaxed);
#ifdef EMBER_HAS_CUDA
  nvtxRangePushA(name);
#else
  (void)name;
#endif
}

void nvtx_pop() {
#ifdef EMBER_HAS_CUDA
  nvtxRangePop();
#endif
}
}  // namespace detail

void set_nvtx_enabled(bool enabled) { detail::nvtx_on.store(enabled, std::memory_order_relaxed); }
int64_t nvtx_ranges_pushed() { return ranges_pushed.load(std::memory_order_relaxed); }

bool nvtx_available() {
#ifdef EMBER_HAS_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace ember::profiler
