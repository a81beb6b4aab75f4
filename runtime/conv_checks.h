// The argument checks and autocast lowering shared by the convolutions (functional_conv.cpp) and
// the transposed convolutions (functional_conv_transpose.cpp). Internal to those files.
#pragma once

#include <cstdint>

#include "runtime/spatial_dims.h"
#include "runtime/tensor.h"

namespace ember::detail {

// Under autocast, float32 and 16-bit tensors lowered to autocast's dtype (each cast a dispatched
// to_dtype, so gradients flow back in the caller's dtype); float64 and undefined tensors as they
// are, as PyTorch's autocast leaves float64 alone.
Tensor conv_autocast_lowered(const Tensor& tensor);

// input, weight and (when defined) bias: floating, one dtype, one device; weight has spatial + 2
// dims; bias is 1-D.
void check_conv_operands(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, int spatial);

// input [N, C, S...] as it is, or unbatched [C, S...] with a batch dim of 1 added (`unbatched` set).
Tensor conv_batched_input(const char* op, const Tensor& input, int spatial, bool& unbatched);

// `values` expanded to one per spatial dim, each > 0 (positive) or >= 0 (!positive).
Dims conv_sizes(const char* op, const char* what, const SpatialDims& values, int spatial, bool positive);

// The product of dims [from, dims.size()).
int64_t trailing_product(const Dims& dims, int from);

}  // namespace ember::detail
