// The input checks the decomposition ops (linalg_qr, linalg_eigh, linalg_svd) share, with
// PyTorch's wording, and the small matrix helpers of their backward rules.
#pragma once

#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember::ops {

// A batch of float32 / float64 matrices: at least 2 dims. `name` is PyTorch's ("linalg.qr").
inline void check_decomposable(const Tensor& input, const char* name) {
  check(input.dim() >= 2, "{}: The input tensor A must have at least 2 dimensions, got shape {}", name, input.sizes());
  check(is_floating(input.dtype()), "{}: Expected a floating point tensor as input. Got {} (shape {})", name,
        input.dtype(), input.sizes());
  check(input.dtype() == kFloat32 || input.dtype() == kFloat64,
        "{}: {} is not supported: the decomposition runs in float32 or float64 (PyTorch has no 16-bit kernels for "
        "it either); convert with to_dtype first (shape {})",
        name, input.dtype(), input.sizes());
}

// `sizes` with the last `drop` dims replaced by `tail`.
inline Dims batch_with(const Dims& sizes, int drop, std::initializer_list<int64_t> tail) {
  Dims result(std::span<const int64_t>(sizes.begin(), sizes.size() - drop));
  for (int64_t size : tail) result.push_back(size);
  return result;
}

inline Tensor transposed(const Tensor& matrix) { return matrix.transpose(-2, -1); }

}  // namespace ember::ops
