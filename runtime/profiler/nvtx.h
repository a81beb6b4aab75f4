// NVTX ranges around dispatched ops, so Nsight Systems shows a model's structure (linear, relu,
// cross_entropy, ...) above the kernels. Off by default; EMBER_NVTX=1 turns it on for the process.
// When off, the cost is one relaxed load of a flag per op. NVTX itself is header-only: it talks to
// a profiler only when one injected itself, so nothing links or loads libcuda.
#pragma once

#include <atomic>
#include <cstdint>

namespace ember::profiler {

namespace detail {
extern std::atomic<bool> nvtx_on;
void nvtx_push(const char* name);
void nvtx_pop();
}  // namespace detail

inline bool nvtx_enabled() { return detail::nvtx_on.load(std::memory_order_relaxed); }
// Overrides EMBER_NVTX for the process (tests, or a profiler front end).
void set_nvtx_enabled(bool enabled);
// Ranges pushed so far in this process: what tests read to see that ops were annotated.
int64_t nvtx_ranges_pushed();
// True when the NVTX calls reach the real NVTX API (the CUDA toolkit was built in); without it
// ranges are only counted.
bool nvtx_available();

// One range for the scope's lifetime when NVTX is on; nothing otherwise.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) : active_(nvtx_enabled()) {
    if (active_) [[unlikely]] detail::nvtx_push(name);
  }
  ~NvtxRange() {
    if (active_) [[unlikely]] detail::nvtx_pop();
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool active_;
};

}  // namespace ember::profiler
