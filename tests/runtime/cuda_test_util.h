// What the CUDA-only test files share: the device they run on, and the check that skips a case
// with a message (never a silent pass) on a machine without a usable GPU.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "runtime/ember.h"
#include "skip_case.h"

namespace ember::cuda_test {

inline const Device kCuda0{DeviceType::CUDA, 0};

// True when CUDA can run here; otherwise prints why the case is skipped and returns false.
inline bool have_cuda() {
  std::string why;
  if (cuda_is_available(&why)) return true;
  ember::testing::skip_case("CUDA unavailable: " + why);
  return false;
}

}  // namespace ember::cuda_test
