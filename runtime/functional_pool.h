// Pooling with torch.nn.functional's semantics: max_pool1d/2d/3d (with or without indices),
// avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d and adaptive_max_pool1d/2d/3d. They are composites of
// registry ops (runtime/pool_windows.h): a box is reduced one spatial dim at a time (a max or sum
// over a box is the max or sum along each of its dims in turn), each dim's windows gathered by one
// index_select whose index comes from arange on the device. Autograd (to any order), CUDA, autocast
// and the compile stage's capture come from those ops.
//
// Inputs are [N, C, S...] or unbatched [C, S...] (the result then has no N either); every dim but
// N must be non-empty. Memory: a dim's windows are kernel / stride times the tensor reduced along
// it (about 1x for the usual stride = kernel_size).
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "runtime/spatial_dims.h"
#include "runtime/tensor.h"

namespace ember {

// Output size along a dim, PyTorch's pooling_output_shape: floor((S + 2 padding - dilation
// (kernel - 1) - 1) / stride) + 1, or with ceil_mode the ceiling, less one when that last window
// would start past the input and its left padding (windows may run past the right padding then).
struct MaxPoolOptions {
  SpatialDims stride = Dims{};  // empty (PyTorch's None): kernel_size
  // Implicit -inf (an integer dtype's lowest value) at both ends: at most half the kernel, or half
  // the dilated kernel in 2-D, and in 1-D with indices or with an input that records gradients
  // (PyTorch runs those as 2-D pools), as PyTorch checks.
  SpatialDims padding = 0;
  SpatialDims dilation = 1;     // the step between a window's elements
  bool ceil_mode = false;
};

// The max of each window. Ties and NaN as PyTorch's kernels: the first maximum in row-major window
// order wins, and a NaN beats everything (the last NaN of a window is the one chosen). The
// gradient reaches that one element only. Floating and int32/int64 inputs (bool is refused).
Tensor max_pool1d(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options = {},
                  Where where = Where::current());
Tensor max_pool2d(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options = {},
                  Where where = Where::current());
Tensor max_pool3d(const Tensor& input, SpatialDims kernel_size, MaxPoolOptions options = {},
                  Where where = Where::current());
// (values, indices): the int64 index of each chosen element within its input plane (row-major over
// the spatial dims, as PyTorch's, so max_unpool could scatter with it). A window that holds only
// padding (PyTorch's checks allow one with dilation) gives the lowest value and index -1, where
// PyTorch's index points past the plane.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, SpatialDims kernel_size,
                                                   MaxPoolOptions options = {}, Where where = Where::current());
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, SpatialDims kernel_size,
                                                   MaxPoolOptions options = {}, Where where = Where::current());
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, SpatialDims kernel_size,
                                                   MaxPoolOptions options = {}, Where where = Where::current());

struct AvgPoolOptions {
  SpatialDims stride = Dims{};  // empty (PyTorch's None): kernel_size
  SpatialDims padding = 0;      // implicit zeros at both ends, at most half the kernel
  bool ceil_mode = false;
  // Whether the padding counts in the divisor. With ceil_mode a window running past the right
  // padding counts only up to the padding's end, as PyTorch's AvgPool kernels.
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;  // non-zero; avg_pool2d/3d only, as PyTorch's
};

// The mean of each window: its sum divided by the number of its elements (see count_include_pad)
// or by divisor_override. Floating inputs only (PyTorch's CPU kernel also takes int64 with a
// truncating division; its CUDA kernel refuses integers, as ember does everywhere). bf16 and fp16
// are summed in float32 and rounded once.
Tensor avg_pool1d(const Tensor& input, SpatialDims kernel_size, AvgPoolOptions options = {},
                  Where where = Where::current());
Tensor avg_pool2d(const Tensor& input, SpatialDims kernel_size, AvgPoolOptions options = {},
                  Where where = Where::current());
Tensor avg_pool3d(const Tensor& input, SpatialDims kernel_size, AvgPoolOptions options = {},
                  Where where = Where::current());

// Adaptive pools: output_size O per spatial dim (>= 0); along a dim of size S, output i pools
// input [floor(i S / O), ceil((i + 1) S / O)), PyTorch's windows (they overlap when O does not
// divide S). Floating inputs only, as PyTorch's. The max variants choose as max_pool does.
Tensor adaptive_avg_pool1d(const Tensor& input, SpatialDims output_size, Where where = Where::current());
Tensor adaptive_avg_pool2d(const Tensor& input, SpatialDims output_size, Where where = Where::current());
Tensor adaptive_avg_pool3d(const Tensor& input, SpatialDims output_size, Where where = Where::current());
Tensor adaptive_max_pool1d(const Tensor& input, SpatialDims output_size, Where where = Where::current());
Tensor adaptive_max_pool2d(const Tensor& input, SpatialDims output_size, Where where = Where::current());
Tensor adaptive_max_pool3d(const Tensor& input, SpatialDims output_size, Where where = Where::current());
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, SpatialDims output_size,
                                                            Where where = Where::current());
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, SpatialDims output_size,
                                                            Where where = Where::current());
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, SpatialDims output_size,
                                                            Where where = Where::current());

}  // namespace ember
