// Resampling with torch.nn.functional's semantics: interpolate (nearest, nearest-exact, linear,
// bilinear, trilinear, bicubic, area) and pixel_shuffle / pixel_unshuffle. All are composites of
// registry ops (index_select, mul, sum, reshape, permute, adaptive_avg_pool), so autograd, CUDA,
// autocast and the compile stage's capture come from those ops. Included by runtime/nn/functional.h.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "runtime/spatial_dims.h"
#include "runtime/tensor.h"

namespace ember::nn::functional {

// F.interpolate's mode strings: 'nearest', 'nearest-exact', 'linear', 'bilinear', 'trilinear',
// 'bicubic', 'area'.
enum class InterpolateMode { Nearest, NearestExact, Linear, Bilinear, Trilinear, Bicubic, Area };
// The mode as PyTorch spells it ("nearest-exact").
std::string_view interpolate_mode_name(InterpolateMode mode);

// Scale factors given as PyTorch's float-or-tuple argument: one for every spatial dim (2.0) or one
// per dim ({2.0, 1.5}).
class ScaleFactors {
 public:
  ScaleFactors(double value) : values_{value} {}                           // NOLINT: 2.0 means 2.0 everywhere
  ScaleFactors(std::initializer_list<double> values) : values_(values) {}  // NOLINT
  const std::vector<double>& values() const { return values_; }

 private:
  std::vector<double> values_;
};

// torch.nn.functional.interpolate's arguments: exactly one of size and scale_factor.
struct InterpolateOptions {
  std::optional<SpatialDims> size;
  std::optional<ScaleFactors> scale_factor;
  InterpolateMode mode = InterpolateMode::Nearest;
  // Linear modes and bicubic only (PyTorch's None means false there); an error for the others.
  std::optional<bool> align_corners;
  // True: the output size floor(S * scale_factor) is computed first and the sampling uses S / output
  // (as with size). Otherwise the sampling uses 1 / scale_factor, as PyTorch's default does.
  std::optional<bool> recompute_scale_factor;
  // Refused: ember has no anti-aliased (separable filter) kernels.
  bool antialias = false;
};

// input [N, C, S...] with 1 to 3 spatial dims (linear needs 3-D, bilinear and bicubic 4-D,
// trilinear 5-D input) resampled to [N, C, O...], O = size, or floor(S * scale_factor). Source
// positions are PyTorch's (aten/src/ATen/native/UpSample.h) along each spatial dim d of size S,
// output o, with scale s = S / O, or 1 / scale_factor when it is given and not recomputed:
//   nearest:        i = min(floor(o s), S - 1)
//   nearest-exact:  i = min(floor(max(s (o + 0.5) - 0.5, 0) + 0.5), S - 1), ATen CPU's form of
//                   floor((o + 0.5) s) (the same below 2^22)
//   linear:         x = (S - 1) / (O - 1) o with align_corners (0 when O = 1), else
//                   max(s (o + 0.5) - 0.5, 0); i0 = min(trunc(x), S - 1), i1 = min(i0 + 1, S - 1),
//                   w1 = clamp(x - i0, 0, 1), w0 = 1 - w1; O = S copies the dim unchanged.
//   bicubic:        x as linear but not clamped at 0; i = min(floor(x), S - 1), t = clamp(x - i, 0, 1),
//                   taps i - 1 .. i + 2 clamped into [0, S - 1] with Keys' cubic weights, A = -0.75.
//   area:           adaptive_avg_pool to O.
// Indices and weights are computed on the device from arange in PyTorch's opmath type (float32 for
// float32, float16 and bfloat16 inputs, float64 for float64), op for op as PyTorch's CPU kernels
// round them, so nearest picks PyTorch's element even where o s lands on an integer. Linear modes
// and bicubic go one spatial dim at a time (they are separable) and need floating inputs; float16
// and bfloat16 are computed in float32 and rounded once. Nearest modes take any dtype.
// Differences: the nearest modes also take int32, int64 and bool (PyTorch: floating and uint8);
// ember follows ATen's contiguous CPU kernel everywhere, where its channels-last CPU path copies
// (nearest, output = input) or halves (output = 2 input) the index even with a scale_factor that
// says otherwise; a channels-last input gives a contiguous result; antialias is refused.
Tensor interpolate(const Tensor& input, const InterpolateOptions& options, Where where = Where::current());

// torch.nn.functional.pixel_shuffle: [*, C r^2, H, W] -> [*, C, H r, W r] with
// out[.., c, h r + i, w r + j] = in[.., c r^2 + i r + j, h, w]. At least 3 dims, r > 0, C r^2
// divisible by r^2. A reshape, permute and reshape (a new tensor).
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor, Where where = Where::current());
// torch.nn.functional.pixel_unshuffle, its inverse: [*, C, H r, W r] -> [*, C r^2, H, W]; H and W
// must be divisible by r.
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor, Where where = Where::current());

}  // namespace ember::nn::functional
