// Steps the activation composites of functional_activations_more.h share: the floating-input check,
// the float32 computing type of 16-bit inputs, and a scalar of a tensor's dtype.
#pragma once

#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::nn::functional::detail {

// PyTorch's kernels of these activations dispatch floating types only.
inline void check_floating_input(const char* function, const Tensor& input) {
  check(is_floating(input.dtype()), "{}: expected a floating-point input, got {} (shape {})", function, input.dtype(),
        input.sizes());
}

// bf16 and fp16 are computed in float32 (PyTorch's opmath type) and rounded once at the end.
inline DType computing_dtype(DType dtype) { return dtype == kBFloat16 || dtype == kFloat16 ? kFloat32 : dtype; }
inline Tensor to_computing_dtype(const Tensor& input) { return input.to(computing_dtype(input.dtype())); }

// A 0-d tensor of `like`'s dtype and device: comparisons and `where` with it keep like's dtype, and
// the number is rounded to that dtype first, as PyTorch's kernels convert their Scalar arguments.
inline Tensor scalar_of(double value, const Tensor& like) { return ops::scalar_like(value, like); }

}  // namespace ember::nn::functional::detail
