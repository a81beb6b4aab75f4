// F::grid_sample (functional_grid_sample.h): the arguments checked as ATen's grid_sampler checks
// them, then every output point read from the input flattened to [N, C, S] by gathers at the
// linear index of each tap (4 or 8 corners, 1 nearest pixel, 16 bicubic taps), taps outside the
// input masked to 0 and combined with weights computed from the grid by differentiable ops.
#include "runtime/nn/functional_grid_sample.h"

#include <cstdint>
#include <vector>

#include "runtime/autocast.h"
#include "runtime/dims.h"
#include "runtime/dtype.h"
#include "runtime/functional.h"
#include "runtime/nn/functional_grid_sample_coordinates.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::nn::functional {

std::string_view grid_sample_mode_name(GridSampleMode mode) {
  switch (mode) {
    case GridSampleMode::Bilinear:
      return "bilinear";
    case GridSampleMode::Nearest:
      return "nearest";
    case GridSampleMode::Bicubic:
      return "bicubic";
  }
  internal_assert(false, "grid_sample_mode_name: a mode without a name");
  return "";
}

std::string_view grid_sample_padding_name(GridSamplePadding padding) {
  switch (padding) {
    case GridSamplePadding::Zeros:
      return "zeros";
    case GridSamplePadding::Border:
      return "border";
    case GridSamplePadding::Reflection:
      return "reflection";
  }
  internal_assert(false, "grid_sample_padding_name: a padding mode without a name");
  return "";
}

namespace {

void check_arguments(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options) {
  check(input.defined() && grid.defined(), "grid_sample: expected input and grid to be defined");
  check(input.device() == grid.device(),
        "grid_sample: expected input and grid to be on same device, but input is on {} and grid is on {}",
        input.device(), grid.device());
  check(is_floating(input.dtype()) && input.dtype() == grid.dtype(),
        "grid_sample: expected input and grid to have the same floating dtype, but input has {} and grid has {}",
        input.dtype(), grid.dtype());
  check((input.dim() == 4 || input.dim() == 5) && input.dim() == grid.dim(),
        "grid_sample: expected 4D or 5D input and grid with same number of dimensions, but got input with sizes "
        "{} and grid with sizes {}",
        input.sizes(), grid.sizes());
  check(input.size(0) == grid.size(0),
        "grid_sample: expected grid and input to have same batch size, but got input with sizes {} and grid "
        "with sizes {}",
        input.sizes(), grid.sizes());
  check(grid.size(-1) == input.dim() - 2,
        "grid_sample: expected grid to have size {} in last dimension, but got grid with sizes {}", input.dim() - 2,
        grid.sizes());
  for (int d = 2; d < input.dim(); ++d)
    check(input.size(d) > 0,
          "grid_sample: expected input to have non-empty spatial dimensions, but input has sizes {} with "
          "dimension {} being empty",
          input.sizes(), d);
  check(!(input.dim() == 5 && options.mode == GridSampleMode::Bicubic),
        "grid_sample: bicubic interpolation only supports 4D input, got input with sizes {}", input.sizes());
}

// The input seen as [N, C, S] (S its spatial elements) and read at integer-valued positions.
struct TapReader {
  Tensor flat;
  Dims spatial;  // the input's spatial sizes, D, H, W order
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t points = 0;  // output points per batch entry

  // positions[a]: [N, P], integer-valued coordinates along spatial axis a. Returns [N, C, P], with
  // 0 where a position lies outside the input; `inside` receives the [N, 1, P] mask.
  Tensor read(const std::vector<Tensor>& positions, Tensor& inside) const {
    Tensor index;
    for (int a = 0; a < spatial.size(); ++a) {
      const Tensor& position = positions[a];
      const double last = static_cast<double>(spatial[a] - 1);
      const Tensor within =
          logical_and(ge(position, ops::scalar_like(0.0, position)), le(position, ops::scalar_like(last, position)));
      inside = a == 0 ? within : logical_and(inside, within);
      // Clamped so the gather stays inside the input; the mask drops what was outside.
      const Tensor axis_index = to_dtype(clamp(position, 0.0, last), kInt64);
      index =
          a == 0 ? axis_index : add(mul(index, ops::scalar_like(static_cast<double>(spatial[a]), index)), axis_index);
    }
    inside = unsqueeze(inside, 1);
    const Tensor values = gather(flat, 2, expand(unsqueeze(index, 1), {batch, channels, points}));
    return where(inside, values, ops::scalar_like(0.0, values));
  }
};

// Bilinear (trilinear in 5-D): per axis corners floor(x) and floor(x) + 1 with weights
// floor(x) + 1 - x and x - floor(x); each corner's weight the product over x, y, z in that order.
Tensor sample_linear(const TapReader& reader, const std::vector<Tensor>& coordinates) {
  const int axes = static_cast<int>(coordinates.size());
  std::vector<Tensor> floors, low_weights, high_weights;
  for (const Tensor& x : coordinates) {
    const Tensor low = floor(x);
    floors.push_back(low);
    low_weights.push_back(sub(add(low, 1.0), x));
    high_weights.push_back(sub(x, low));
  }
  Tensor result;
  // Corner bits: bit 0 steps x (the last axis), bit 1 y, bit 2 z: PyTorch's nw, ne, sw, se order.
  for (int corner = 0; corner < (1 << axes); ++corner) {
    std::vector<Tensor> positions(axes);
    Tensor weight;
    for (int bit = 0; bit < axes; ++bit) {
      const int axis = axes - 1 - bit;
      const bool high = (corner >> bit) & 1;
      positions[axis] = high ? add(floors[axis], 1.0) : floors[axis];
      const Tensor& axis_weight = high ? high_weights[axis] : low_weights[axis];
      weight = bit == 0 ? axis_weight : mul(weight, axis_weight);
    }
    Tensor inside;
    const Tensor values = reader.read(positions, inside);
    // A corner outside the input adds nothing, not even values * weight (an inf weight's NaN).
    const Tensor term = where(inside, mul(values, unsqueeze(weight, 1)), ops::scalar_like(0.0, values));
    result = corner == 0 ? term : add(result, term);
  }
  return result;
}

// Nearest: each coordinate rounded half to even. The values are multiplied by round(x) * 0 + 1 so
// the output depends on the grid in autograd's eyes, whose gradient is then 0, as PyTorch's.
Tensor sample_nearest(const TapReader& reader, const std::vector<Tensor>& coordinates) {
  std::vector<Tensor> positions;
  for (const Tensor& x : coordinates) positions.push_back(round(x));
  Tensor inside;
  const Tensor values = reader.read(positions, inside);
  const Tensor unit = unsqueeze(add(mul(positions[0], 0.0), 1.0), 1);
  return where(inside, mul(values, unit), ops::scalar_like(0.0, values));
}

// Keys' cubic convolution, A = -0.75, as ATen's cubic_convolution1 (|t| <= 1) and 2 (1 < |t| < 2).
constexpr double kCubicA = -0.75;
Tensor cubic_near(const Tensor& t) { return add(mul(mul(sub(mul(t, kCubicA + 2), kCubicA + 3), t), t), 1.0); }
Tensor cubic_far(const Tensor& t) {
  return sub(mul(add(mul(sub(mul(t, kCubicA), 5 * kCubicA), t), 8 * kCubicA), t), 4 * kCubicA);
}

// cubic_interp1d: v0 c0 + v1 c1 + v2 c2 + v3 c3, left to right, with the coefficients of t.
Tensor cubic_interpolate(const std::vector<Tensor>& values, const Tensor& t) {
  const Tensor opposite = rsub(t, 1.0);
  const Tensor coefficients[4] = {cubic_far(add(t, 1.0)), cubic_near(t), cubic_near(opposite),
                                  cubic_far(add(opposite, 1.0))};
  Tensor sum = mul(values[0], unsqueeze(coefficients[0], 1));
  for (int k = 1; k < 4; ++k) sum = add(sum, mul(values[k], unsqueeze(coefficients[k], 1)));
  return sum;
}

// Bicubic (4-D): taps floor(x) - 1 .. floor(x) + 2 per axis, each padded (get_value_bounded) and
// truncated; rows along x interpolated first, then those four along y. A tap outside the input
// reads 0 and is still multiplied by its coefficient (a NaN coefficient gives NaN, as in PyTorch).
Tensor sample_bicubic(const TapReader& reader, const std::vector<Tensor>& unnormalized, GridSamplePadding padding,
                      bool align_corners) {
  const Tensor& y = unnormalized[0];
  const Tensor& x = unnormalized[1];
  const Tensor floor_x = floor(x);
  const Tensor floor_y = floor(y);
  auto tap = [&](const Tensor& base, int offset, int64_t size) {
    return trunc(detail::pad_coordinate(add(base, static_cast<double>(offset)), size, padding, align_corners));
  };
  std::vector<Tensor> columns, rows;
  for (int j = 0; j < 4; ++j) columns.push_back(tap(floor_x, j - 1, reader.spatial[1]));
  for (int i = 0; i < 4; ++i) {
    const Tensor row_position = tap(floor_y, i - 1, reader.spatial[0]);
    std::vector<Tensor> values;
    for (int j = 0; j < 4; ++j) {
      Tensor inside;
      values.push_back(reader.read({row_position, columns[j]}, inside));
    }
    rows.push_back(cubic_interpolate(values, sub(x, floor_x)));
  }
  return cubic_interpolate(rows, sub(y, floor_y));
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options, Where where) {
  CallSiteScope site(where);
  // On PyTorch's autocast promote list: the wider of the two floating dtypes.
  Tensor source = input;
  Tensor points = grid;
  if (autocast_enabled() && input.defined() && grid.defined() && is_floating(input.dtype()) &&
      is_floating(grid.dtype()) && input.dtype() != grid.dtype()) {
    const DType wider = promote_types(input.dtype(), grid.dtype());
    source = to_dtype(input, wider);
    points = to_dtype(grid, wider);
  }
  check_arguments(source, points, options);
  const DType dtype = source.dtype();
  const DType opmath = dtype == kFloat64 ? kFloat64 : kFloat32;  // bf16 / fp16 computed in float32
  if (dtype != opmath) {
    source = to_dtype(source, opmath);
    points = to_dtype(points, opmath);
  }
  const int axes = source.dim() - 2;
  TapReader reader{.batch = source.size(0), .channels = source.size(1)};
  Dims output_sizes{reader.batch, reader.channels};
  reader.points = 1;
  for (int a = 0; a < axes; ++a) {
    reader.spatial.push_back(source.size(2 + a));
    output_sizes.push_back(points.size(1 + a));
    reader.points *= points.size(1 + a);
  }
  reader.flat = reshape(source, {reader.batch, reader.channels, reader.spatial.product()});
  const Tensor flat_grid = reshape(points, {reader.batch, reader.points, axes});
  const bool align = options.align_corners.value_or(false);
  // Coordinates per spatial axis in the input's order (D, H, W): grid component axes - 1 - a.
  std::vector<Tensor> unnormalized;
  for (int a = 0; a < axes; ++a)
    unnormalized.push_back(detail::unnormalize_coordinate(flat_grid.select(2, axes - 1 - a), reader.spatial[a], align));
  Tensor result;
  if (options.mode == GridSampleMode::Bicubic) {
    result = sample_bicubic(reader, unnormalized, options.padding_mode, align);
  } else {
    std::vector<Tensor> padded;
    for (int a = 0; a < axes; ++a)
      padded.push_back(detail::pad_coordinate(unnormalized[a], reader.spatial[a], options.padding_mode, align));
    result = options.mode == GridSampleMode::Nearest ? sample_nearest(reader, padded) : sample_linear(reader, padded);
  }
  result = reshape(result, output_sizes);
  return result.dtype() == dtype ? result : to_dtype(result, dtype);
}

}  // namespace ember::nn::functional
