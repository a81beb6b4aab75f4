// Restores the TF32 switch however a test leaves (the GEMM tests set it both ways).
#pragma once

#include "runtime/cuda_settings.h"

namespace ember {

struct Tf32Scope {
  bool saved = get_allow_tf32();
  explicit Tf32Scope(bool allow) { set_allow_tf32(allow); }
  ~Tf32Scope() { set_allow_tf32(saved); }
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;
};

}  // namespace ember
