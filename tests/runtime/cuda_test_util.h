// What the CUDA-only test files share: the device they run on, and (from skip_case.h)
// cuda_or_skip, which reports a case as skipped, never passed, on a machine without a usable GPU.
#pragma once

#include "runtime/ember.h"
#include "skip_case.h"

namespace ember::cuda_test {

inline const Device kCuda0{DeviceType::CUDA, 0};

}  // namespace ember::cuda_test
