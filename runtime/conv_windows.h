// The sliding windows behind convolution, unfold/fold and pooling (functional_conv.cpp,
// functional_conv_transpose.cpp, functional_pool.cpp), built from registry ops so that autograd,
// CUDA, autocast and the compile stage's capture come with them.
//
// A window is separable: along each spatial dim, window o covers positions o * stride + k * dilation
// for k < kernel. So one index_select per spatial dim gathers every window (the index is built on
// the device from arange, so a capture records it like any other op), and one index_add per dim
// sums windows back (its adjoint: fold, the input gradient of a convolution, a transposed
// convolution). Each gather's backward is that index_add and the reverse, so both are differentiable
// to any order. Nothing here pads: callers pad first with pad() (zeros, -inf for max pooling, the
// padding modes of nn::Conv).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace ember::detail {

// One spatial dim's window geometry.
struct WindowDim {
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
};

// The number of whole windows along a dim of `size`: floor((size - dilation (kernel - 1) - 1) / stride)
// + 1, or 0 when not even one fits.
int64_t window_count(int64_t size, const WindowDim& dim);

// input [N, C, S1..Sd] (d = dims.size()) -> windows [N, C, K1..Kd, O1..Od] (a permuted view of one
// new tensor), where element (n, c, k.., o..) is input (n, c, o1 s1 + k1 d1, ...). Every O must be >= 1.
Tensor extract_windows(const Tensor& input, const std::vector<WindowDim>& dims);

// The adjoint of extract_windows: windows [N, C, K1..Kd, O1..Od] summed into a new zero tensor
// [N, C, sizes...], each element added at the position extract_windows read it from. `sizes` must
// hold every window.
Tensor sum_windows(const Tensor& windows, const Dims& sizes, const std::vector<WindowDim>& dims);

}  // namespace ember::detail
