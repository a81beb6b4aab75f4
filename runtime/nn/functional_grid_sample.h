// Spatial transformers with torch.nn.functional's semantics: affine_grid (the sampling grid of a
// batch of affine matrices) and grid_sample (an input read at those grid points). Both are
// composites of registry ops (linspace, bmm, floor, round, gather, where, arithmetic), so autograd
// (w.r.t. theta, input and grid), CUDA, autocast and the compile stage's capture come from those
// ops. Included by runtime/nn/functional.h.
#pragma once

#include <optional>
#include <string_view>

#include "runtime/dims.h"
#include "runtime/tensor.h"

namespace ember::nn::functional {

// torch.nn.functional.affine_grid: theta [N, 2, 3] with size [N, C, H, W] gives grid [N, H, W, 2];
// theta [N, 3, 4] with size [N, C, D, H, W] gives grid [N, D, H, W, 3]. Each grid point is theta
// times the homogeneous base point (x, y[, z], 1), x running over W, y over H, z over D, each from
// linspace(-1, 1, S), scaled by (S - 1) / S without align_corners (0 where S = 1), as PyTorch's
// affine_grid_generator. theta must be floating; its N must be size[0]. As PyTorch, a size <= 0 is
// refused unless align_corners is set and a spatial size is 1 (PyTorch only warns there).
// align_corners: PyTorch's None means false.
Tensor affine_grid(const Tensor& theta, const Dims& size, std::optional<bool> align_corners = std::nullopt,
                   Where where = Where::current());

// grid_sample's mode and padding_mode (PyTorch's strings 'bilinear', 'nearest', 'bicubic' and
// 'zeros', 'border', 'reflection').
enum class GridSampleMode { Bilinear, Nearest, Bicubic };
enum class GridSamplePadding { Zeros, Border, Reflection };
std::string_view grid_sample_mode_name(GridSampleMode mode);
std::string_view grid_sample_padding_name(GridSamplePadding padding);

// torch.nn.functional.grid_sample's options (libtorch's F::GridSampleFuncOptions).
struct GridSampleFuncOptions {
  GridSampleMode mode = GridSampleMode::Bilinear;
  GridSamplePadding padding_mode = GridSamplePadding::Zeros;
  std::optional<bool> align_corners;  // PyTorch's None means false
};

// torch.nn.functional.grid_sample: input [N, C, H, W] read at grid [N, Ho, Wo, 2] gives
// [N, C, Ho, Wo]; input [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] gives [N, C, Do, Ho, Wo]
// (bilinear, meaning trilinear there, and nearest; bicubic is 4-D only, as in PyTorch).
// grid[..., 0] is x (along W), grid[..., 1] y (along H), grid[..., 2] z (along D), in [-1, 1]
// for the input's extent. Per axis of size S (ATen's GridSampler.h):
//   unnormalize:  ((g + 1) / 2) (S - 1) with align_corners, else ((g + 1) S - 1) / 2
//   border:       clamp into [0, S - 1]
//   reflection:   reflected about -0.5 and S - 0.5 (about 0 and S - 1 with align_corners), then
//                 clamped into [0, S - 1]
//   then a coordinate that is not finite or beyond the int range becomes -100 (out of bounds),
//   so a NaN grid point samples zeros (PyTorch's CPU and CUDA kernels disagree among themselves
//   about NaN under border and reflection padding).
//   bilinear:     corners floor(x) and floor(x) + 1 per axis, weights (floor(x) + 1 - x) and
//                 (x - floor(x)) multiplied x, y, z; corners outside the input add nothing,
//                 summed in PyTorch's order (nw, ne, sw, se; then the bottom layer in 5-D).
//   nearest:      round half to even (nearbyint); outside the input: 0.
//   bicubic:      unnormalized without padding; 4 x 4 taps floor(x) - 1 .. floor(x) + 2, each tap's
//                 integer coordinate padded as above and truncated, 0 outside; Keys' cubic weights
//                 (A = -0.75) of t = x - floor(x), rows along x first, then along y.
// Gradients flow to input and grid; for grid, through the bilinear and bicubic weights (nearest:
// zeros), times the derivative of unnormalize, clamp (0 at and beyond a bound) and reflection (-1 on
// a mirrored stretch), as PyTorch's backward kernels. A bilinear weight's rounding follows PyTorch's
// CUDA and scalar CPU kernels ((floor + 1) - x), where its vectorized CPU kernel computes
// 1 - (x - floor) (an ulp apart). input and grid must be floating of the same dtype and device
// (under autocast, the wider of the two is used, as PyTorch's promote rule); bf16 and fp16 are
// computed in float32 and rounded once. Cost: one gather of [N, C, P] per tap (P output points).
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options = {},
                   Where where = Where::current());

}  // namespace ember::nn::functional
