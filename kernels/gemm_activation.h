// The activations a GEMM can apply in its output pass (linear's attribute `activation`, an int64
// code like `reduction`): the compile stage folds linear -> relu / gelu into one node with it.
#pragma once

#include <cstdint>

namespace ember {

// GeluTanh is the tanh approximation (cuBLASLt's GELU epilogue computes this one); Gelu the exact
// erf form, which CUDA applies as a separate kernel after the GEMM.
enum class Activation : int64_t { None = 0, Relu = 1, Gelu = 2, GeluTanh = 3 };

inline bool is_activation_code(int64_t code) { return code >= 0 && code <= 3; }

inline const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::None: return "none";
    case Activation::Relu: return "relu";
    case Activation::Gelu: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
  }
  return "unknown";
}

}  // namespace ember
