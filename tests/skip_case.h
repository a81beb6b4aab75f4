// A test case that cannot run on this machine (no GPU, no cuDNN) says why and is reported as
// skipped, never as passed. doctest has no "skipped at run time" result, so tests/main.cpp counts
// the cases that called skip_case: when every case a run selected was skipped and nothing failed,
// it prints kAllSkippedLine, which ctest's SKIP_REGULAR_EXPRESSION turns into "Skipped" (ctest
// runs one case per process).
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "runtime/device.h"

namespace ember::testing {

inline constexpr const char* kAllSkippedLine = "ember: every selected test case was skipped, none passed";

// Defined in tests/main.cpp: marks the running test case as skipped.
void mark_case_skipped();

// Call and return: `skip_case(why); return;` where a case cannot run here.
inline void skip_case(const std::string& why) {
  MESSAGE(why << "; skipped");
  mark_case_skipped();
}

// Skips a GPU case for `why` (CUDA, cuDNN or CUDA graphs unavailable), except with
// EMBER_REQUIRE_CUDA=1 (tools/gpu_check.sh on a GPU machine), where it fails the case instead: a
// run meant to test CUDA must not pass by skipping what it came to test.
inline void skip_gpu_case(const std::string& why) {
  const char* required = std::getenv("EMBER_REQUIRE_CUDA");
  if (required != nullptr && std::string(required) == "1") FAIL("EMBER_REQUIRE_CUDA=1 but " << why);
  skip_case(why);
}

// True when CUDA can run here; otherwise skips the case (skip_gpu_case) with the runtime's
// reason. `if (!cuda_or_skip()) return;` opens every GPU-only case.
inline bool cuda_or_skip() {
  std::string why_not;
  if (cuda_is_available(&why_not)) return true;
  skip_gpu_case("CUDA unavailable: " + why_not);
  return false;
}

}  // namespace ember::testing
