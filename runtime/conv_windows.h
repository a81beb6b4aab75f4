// The sliding windows behind convolution and unfold/fold (functional_conv.cpp,
// functional_conv_transpose.cpp, functional_unfold.cpp), built from registry ops so that autograd,
// CUDA, autocast and the compile stage's capture come with them. (Pooling reduces one dim at a
// time instead: runtime/pool_windows.h.)
//
// Window o along a spatial dim covers positions o * stride + k * dilation for k < kernel. Every
// window element of every window is one position of the flattened spatial dims, so one index_select
// over them gathers all windows, laid out as the caller's GEMM or reduction reads them, and one
// index_add sums windows back (fold, a convolution's input gradient, a transposed convolution).
// The index is built on the device from arange (a capture records it like any other op). Each
// gather's backward is that index_add and the reverse, so both are differentiable to any order.
// Nothing here pads: callers pad first with pad() (zeros, or nn::Conv's padding modes).
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

// Channels first, for unfold and fold: input [N, C, S1..Sd] (d = dims.size()) -> a new tensor
// [N, C, K1..Kd, O1..Od] whose element (n, c, k.., o..) is input (n, c, o1 s1 + k1 d1, ...). Every O
// must be >= 1.
Tensor extract_windows(const Tensor& input, const std::vector<WindowDim>& dims);
// Its adjoint: windows [N, C, K1..Kd, O1..Od] summed into zeros [N, C, sizes...], each element
// added where extract_windows read it. `sizes` must hold every window.
Tensor sum_windows(const Tensor& windows, const Dims& sizes, const std::vector<WindowDim>& dims);

// Channels last, for the convolutions' GEMMs: input [N, S1..Sd, C] -> [N, O1..Od, K1..Kd, C], each
// window's C values one contiguous run (so the gather copies runs, and each output position's
// window is one GEMM row).
Tensor extract_windows_channels_last(const Tensor& input, const std::vector<WindowDim>& dims);
// Its adjoint: windows [N, O1..Od, K1..Kd, C] summed into zeros [N, sizes..., C].
Tensor sum_windows_channels_last(const Tensor& windows, const Dims& sizes, const std::vector<WindowDim>& dims);

}  // namespace ember::detail
