// What the CUDA-only test files share: the device they run on, a scope for the index-checking
// switch, and (from skip_case.h) cuda_or_skip, which reports a case as skipped, never passed, on
// a machine without a usable GPU.
#pragma once

#include "runtime/ember.h"
#include "skip_case.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/index_cuda_common.h"
#endif

namespace ember::cuda_test {

inline const Device kCuda0{DeviceType::CUDA, 0};

#ifdef EMBER_HAS_CUDA
// cuda::set_index_checking for one scope: the setting found on entry comes back on exit, also
// when a failed REQUIRE or an unexpected throw leaves the case early (gpu_check.sh runs every
// cuda case in one process, and the later ones must not inherit the switch).
class IndexCheckingScope {
 public:
  explicit IndexCheckingScope(bool enabled) : before_(cuda::index_checking_enabled()) { set(enabled); }
  ~IndexCheckingScope() { cuda::set_index_checking(before_); }
  IndexCheckingScope(const IndexCheckingScope&) = delete;
  IndexCheckingScope& operator=(const IndexCheckingScope&) = delete;
  void set(bool enabled) { cuda::set_index_checking(enabled); }

 private:
  bool before_;
};
#endif

}  // namespace ember::cuda_test
