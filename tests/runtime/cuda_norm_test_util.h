// What the CUDA layer_norm test files share: a scope that picks the implementation through
// EMBER_LAYER_NORM, and the check that cuDNN can run here (else the case says why and skips).
#pragma once

#include <cstdlib>
#include <string>

#include "runtime/cuda/norm_cuda_ops.h"
#include "skip_case.h"

namespace ember::cuda_test {

// Sets EMBER_LAYER_NORM for one scope, restoring the previous value after.
class LayerNormChoice {
 public:
  explicit LayerNormChoice(const char* value) {
    const char* old = std::getenv("EMBER_LAYER_NORM");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    setenv("EMBER_LAYER_NORM", value, 1);
  }
  ~LayerNormChoice() { had_old_ ? setenv("EMBER_LAYER_NORM", old_.c_str(), 1) : unsetenv("EMBER_LAYER_NORM"); }
  LayerNormChoice(const LayerNormChoice&) = delete;
  LayerNormChoice& operator=(const LayerNormChoice&) = delete;

 private:
  bool had_old_ = false;
  std::string old_;
};

// Whether cuDNN can run here; the cases that need it say why not and stop (ember's kernels are
// checked by the other cases).
inline bool cudnn_or_skip() {
  const std::string why_not = cuda::cudnn_unavailable_reason();
  if (why_not.empty()) return true;
  ember::testing::skip_gpu_case("cuDNN unavailable: " + why_not);
  return false;
}

}  // namespace ember::cuda_test
