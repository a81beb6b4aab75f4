// F::interpolate (functional_interpolate.h): the options checked as torch.nn.functional.interpolate
// checks them, then each spatial dim resampled by one index_select of its K taps (1 nearest, 2
// linear, 4 bicubic) and, with K > 1, a weighted sum over the taps.
#include "runtime/nn/functional_interpolate.h"

#include <cmath>

#include "runtime/functional.h"
#include "runtime/functional_pool.h"
#include "runtime/pool_windows.h"

namespace ember::nn::functional {

std::string_view interpolate_mode_name(InterpolateMode mode) {
  switch (mode) {
    case InterpolateMode::Nearest:
      return "nearest";
    case InterpolateMode::NearestExact:
      return "nearest-exact";
    case InterpolateMode::Linear:
      return "linear";
    case InterpolateMode::Bilinear:
      return "bilinear";
    case InterpolateMode::Trilinear:
      return "trilinear";
    case InterpolateMode::Bicubic:
      return "bicubic";
    case InterpolateMode::Area:
      return "area";
  }
  internal_assert(false, "interpolate_mode_name: a mode without a name");
  return "";
}

namespace {

bool is_interpolating(InterpolateMode mode) {
  return mode == InterpolateMode::Linear || mode == InterpolateMode::Bilinear || mode == InterpolateMode::Trilinear ||
         mode == InterpolateMode::Bicubic;
}

// The input rank a mode needs; 0 for the modes that take 3-D, 4-D and 5-D inputs.
int required_rank(InterpolateMode mode) {
  switch (mode) {
    case InterpolateMode::Linear:
      return 3;
    case InterpolateMode::Bilinear:
    case InterpolateMode::Bicubic:
      return 4;
    case InterpolateMode::Trilinear:
      return 5;
    default:
      return 0;
  }
}

// What the checks leave: per spatial dim the output size and, where scale_factor is given and not
// recomputed, the factor the kernels sample with (PyTorch's `scales` argument).
struct InterpolatePlan {
  Dims input_sizes;
  Dims output_sizes;
  std::vector<std::optional<double>> factors;
  bool align_corners = false;
};

InterpolatePlan plan_of(const Tensor& input, const InterpolateOptions& options) {
  const InterpolateMode mode = options.mode;
  const std::string_view name = interpolate_mode_name(mode);
  check(!options.antialias,
        "interpolate: antialias=True is not supported by ember (no anti-aliased kernels), got mode '{}'", name);
  check(is_interpolating(mode) || !options.align_corners.has_value(),
        "interpolate: align_corners option can only be set with the interpolating modes: linear | bilinear | "
        "bicubic | trilinear, got mode '{}'",
        name);
  check(input.defined(), "interpolate: the input must be defined");
  const int rank = input.dim();
  check(rank >= 3 && rank <= 5,
        "interpolate: Only 3D, 4D and 5D input Tensors supported (got {}D, shape {}) for the "
        "modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got '{}')",
        rank, input.sizes(), name);
  const int needed = required_rank(mode);
  check(needed == 0 || needed == rank, "interpolate: Got {}D input (shape {}), but {} mode needs {}D input", rank,
        input.sizes(), name, needed);
  check(!(options.size && options.scale_factor), "interpolate: only one of size or scale_factor should be defined");
  check(options.size || options.scale_factor, "interpolate: either size or scale_factor should be defined");
  check(!(options.size && options.recompute_scale_factor.value_or(false)),
        "interpolate: recompute_scale_factor is not meaningful with an explicit size.");
  const int spatial = rank - 2;
  InterpolatePlan plan{.align_corners = options.align_corners.value_or(false)};
  for (int d = 0; d < spatial; ++d) plan.input_sizes.push_back(input.size(2 + d));
  if (options.size) {
    const Dims& sizes = options.size->values();
    check(sizes.size() == 1 || sizes.size() == spatial,
          "interpolate: Input and output must have the same number of "
          "spatial dimensions, but got input with spatial dimensions of {} and output size of {}",
          plan.input_sizes, sizes);
    plan.output_sizes = sizes.size() == 1 ? Dims::filled(spatial, sizes[0]) : sizes;
    plan.factors.assign(spatial, std::nullopt);
  } else {
    const std::vector<double>& factors = options.scale_factor->values();
    check(factors.size() == 1 || static_cast<int>(factors.size()) == spatial,
          "interpolate: Input and scale_factor "
          "must have the same number of spatial dimensions, but got input with spatial dimensions of {} and "
          "scale_factor of shape [{}]",
          plan.input_sizes, fmt::join(factors, ", "));
    // Area mode always samples from sizes, as PyTorch's forces recompute_scale_factor there.
    const bool recompute = options.recompute_scale_factor.value_or(false) || mode == InterpolateMode::Area;
    for (int d = 0; d < spatial; ++d) {
      const double factor = factors.size() == 1 ? factors[0] : factors[d];
      // Python's int(): truncation toward zero.
      const double product = static_cast<double>(plan.input_sizes[d]) * factor;
      check(std::isfinite(product) && std::abs(product) < 0x1p62,
            "interpolate: the output size {} * scale_factor {} "
            "= {} is not an int64 value",
            plan.input_sizes[d], factor, product);
      plan.output_sizes.push_back(static_cast<int64_t>(product));
      plan.factors.push_back(recompute ? std::nullopt : std::optional<double>(factor));
    }
  }
  if (mode == InterpolateMode::Area) return plan;  // adaptive_avg_pool checks the rest
  bool positive = true;
  for (int d = 0; d < spatial; ++d) positive = positive && plan.input_sizes[d] > 0 && plan.output_sizes[d] > 0;
  check(positive,
        "interpolate: Input and output sizes should be greater than 0, but got input {} and output {} "
        "(mode '{}')",
        plan.input_sizes, plan.output_sizes, name);
  check(input.size(1) > 0, "interpolate: Non-empty {}D data tensor expected but got a tensor with sizes {}", rank,
        input.sizes());
  check(!is_interpolating(mode) || is_floating(input.dtype()),
        "interpolate: mode '{}' needs a floating-point input, got {}", name, input.dtype());
  return plan;
}

// PyTorch's sampling scale (area_pixel_compute_scale / compute_scales_value), rounded to the opmath
// type T as PyTorch computes it: (S - 1) / (O - 1) with align_corners, else 1 / scale_factor when
// the kernels are given one, else S / O.
template <typename T>
double sampling_scale(int64_t input, int64_t output, bool align_corners, std::optional<double> factor) {
  if (align_corners) return output > 1 ? static_cast<T>(input - 1) / static_cast<T>(output - 1) : T(0);
  if (factor && *factor > 0) return static_cast<T>(1.0 / *factor);
  return static_cast<T>(input) / static_cast<T>(output);
}

// One dim's taps: int64 indices [K * O] (k-major) and, for K > 1, weights [K, O] in the opmath type.
struct DimTaps {
  Tensor indices;
  Tensor weights;
  int64_t taps = 1;
};

// The nearest modes' index: floor of o s (nearest) or of max(s (o + 0.5) - 0.5, 0) + 0.5
// (nearest-exact), as HelperInterpNearest(Exact) in ATen's UpSampleKernel.cpp. floorf there takes a
// float, so a float64 position is rounded to float32 before its floor, as here.
DimTaps nearest_taps(const Tensor& positions, double scale, int64_t input, bool exact) {
  Tensor source =
      exact ? add(clamp(sub(mul(add(positions, 0.5), scale), 0.5), 0.0, std::nullopt), 0.5) : mul(positions, scale);
  const Tensor index = to_dtype(floor(to_dtype(source, kFloat32)), kInt64);
  return {.indices = clamp(index, std::nullopt, static_cast<double>(input - 1))};
}

// area_pixel_compute_source_index: s o with align_corners, else s (o + 0.5) - 0.5, which linear
// modes clamp at 0 and bicubic does not.
Tensor source_positions(const Tensor& positions, double scale, bool align_corners, bool cubic) {
  if (align_corners) return mul(positions, scale);
  const Tensor source = sub(mul(add(positions, 0.5), scale), 0.5);
  return cubic ? source : clamp(source, 0.0, std::nullopt);
}

// compute_source_index_and_lambda: i0 = min(trunc(x), S - 1), i1 = i0 + 1 but at most S - 1,
// w1 = clamp(x - i0, 0, 1), w0 = 1 - w1.
DimTaps linear_taps(const Tensor& positions, double scale, int64_t input, bool align_corners) {
  const Tensor source = source_positions(positions, scale, align_corners, /*cubic=*/false);
  const Tensor first = clamp(to_dtype(source, kInt64), std::nullopt, static_cast<double>(input - 1));
  const Tensor second = clamp(add(first, 1.0), std::nullopt, static_cast<double>(input - 1));
  const Tensor lambda = clamp(sub(source, to_dtype(first, source.dtype())), 0.0, 1.0);
  return {.indices = cat({first, second}), .weights = stack({rsub(lambda, 1.0), lambda}), .taps = 2};
}

// Keys' cubic convolution with A = -0.75 as UpSample.h evaluates it: ((A + 2) x - (A + 3)) x x + 1
// for |x| <= 1 and ((A x - 5 A) x + 8 A) x - 4 A for 1 < |x| < 2.
constexpr double kCubicA = -0.75;
Tensor cubic_near(const Tensor& x) { return add(mul(mul(sub(mul(x, kCubicA + 2), kCubicA + 3), x), x), 1.0); }
Tensor cubic_far(const Tensor& x) {
  return sub(mul(add(mul(sub(mul(x, kCubicA), 5 * kCubicA), x), 8 * kCubicA), x), 4 * kCubicA);
}

// HelperInterpCubic: i = min(floor(x), S - 1) (floorf, so float32 first), t = clamp(x - i, 0, 1),
// taps i - 1 .. i + 2 clamped into [0, S - 1], weights far(t + 1), near(t), near(1 - t), far(2 - t).
DimTaps cubic_taps(const Tensor& positions, double scale, int64_t input, bool align_corners) {
  const Tensor source = source_positions(positions, scale, align_corners, /*cubic=*/true);
  const Tensor index =
      clamp(to_dtype(floor(to_dtype(source, kFloat32)), kInt64), std::nullopt, static_cast<double>(input - 1));
  const Tensor t = clamp(sub(source, to_dtype(index, source.dtype())), 0.0, 1.0);
  const Tensor opposite = rsub(t, 1.0);
  std::vector<Tensor> taps;
  for (int j = 0; j < 4; ++j) taps.push_back(clamp(add(index, static_cast<double>(j - 1)), 0.0, input - 1.0));
  const Tensor weights =
      stack({cubic_far(add(t, 1.0)), cubic_near(t), cubic_near(opposite), cubic_far(add(opposite, 1.0))});
  return {.indices = cat(taps), .weights = weights, .taps = 4};
}

// The input resampled along `dim` to `output` elements: the taps gathered ([..., K, O, ...]) and
// summed with their weights broadcast over the dims after `dim`.
Tensor resample_dim(const Tensor& input, int dim, int64_t output, const DimTaps& taps) {
  if (taps.taps == 1) return index_select(input, dim, taps.indices);
  const Tensor windows = detail::gather_windows(input, dim, taps.indices, taps.taps, output);
  Dims weight_shape = Dims::filled(input.dim() - dim + 1, 1);
  weight_shape[0] = taps.taps;
  weight_shape[1] = output;
  return sum(mul(windows, reshape(taps.weights, weight_shape)), {dim});
}

Tensor resample(const Tensor& input, const InterpolatePlan& plan, InterpolateMode mode) {
  const DType dtype = input.dtype();
  const Device device = input.device();
  const bool nearest = mode == InterpolateMode::Nearest || mode == InterpolateMode::NearestExact;
  // PyTorch's opmath type: float64 for float64, float32 for the others (integers only reach the
  // nearest modes, whose indices PyTorch computes in float32 too).
  const DType opmath = dtype == kFloat64 ? kFloat64 : kFloat32;
  // bf16 and fp16 are interpolated in float32 and rounded once; gathers need no conversion.
  Tensor result = nearest || dtype == opmath ? input : to_dtype(input, opmath);
  bool resampled = false;
  for (int d = 0; d < static_cast<int>(plan.input_sizes.size()); ++d) {
    const int64_t size = plan.input_sizes[d];
    const int64_t output = plan.output_sizes[d];
    // compute_source_index_and_lambda copies a dim whose size does not change.
    if (!nearest && mode != InterpolateMode::Bicubic && size == output) continue;
    const bool align = plan.align_corners;
    const double scale = opmath == kFloat64 ? sampling_scale<double>(size, output, align, plan.factors[d])
                                            : sampling_scale<float>(size, output, align, plan.factors[d]);
    const Tensor positions = arange(static_cast<double>(output), {.dtype = opmath, .device = device});
    const DimTaps taps = nearest ? nearest_taps(positions, scale, size, mode == InterpolateMode::NearestExact)
                         : mode == InterpolateMode::Bicubic ? cubic_taps(positions, scale, size, align)
                                                            : linear_taps(positions, scale, size, align);
    result = resample_dim(result, 2 + d, output, taps);
    resampled = true;
  }
  if (!resampled) result = clone(result);  // a new tensor, never the input itself, as PyTorch's
  return result.dtype() == dtype ? result : to_dtype(result, dtype);
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateOptions& options, Where where) {
  CallSiteScope site(where);
  const InterpolatePlan plan = plan_of(input, options);
  if (options.mode != InterpolateMode::Area) return resample(input, plan, options.mode);
  switch (input.dim()) {
    case 3:
      return adaptive_avg_pool1d(input, plan.output_sizes);
    case 4:
      return adaptive_avg_pool2d(input, plan.output_sizes);
    default:
      return adaptive_avg_pool3d(input, plan.output_sizes);
  }
}

}  // namespace ember::nn::functional
