// F::interpolate, F::pixel_shuffle/unshuffle and their modules (runtime/nn/functional_interpolate.h,
// runtime/nn/modules/upsampling.h) against float64 references: every output element summed over all
// its source taps at once (not one dim at a time), each dim's taps from PyTorch's UpSample formulas
// evaluated here in PyTorch's opmath type; gradients by central differences; reprs; errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"
#include "runtime/nn/nn.h"

namespace test_interpolate {

using namespace ember;
namespace F = ember::nn::functional;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::small_tensor;
using ember::testing::values_of;
using F::InterpolateMode;

namespace {

struct Tap {
  int64_t index;
  double weight;
};
using PositionTaps = std::vector<std::vector<Tap>>;  // per output position of one dim

// One dim's taps, written from aten/src/ATen/native/UpSample.h and UpSampleKernel.cpp's helpers with
// T the opmath type (float for float32 inputs): floorf takes a float, so positions are rounded to
// float before a floor.
template <typename T>
PositionTaps reference_taps(InterpolateMode mode, int64_t in, int64_t out, bool align, std::optional<double> factor) {
  T scale;
  if (align) {
    scale = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  } else if (factor && *factor > 0) {
    scale = static_cast<T>(1.0 / *factor);
  } else {
    scale = static_cast<T>(in) / static_cast<T>(out);
  }
  PositionTaps taps(out);
  for (int64_t o = 0; o < out; ++o) {
    const T half = static_cast<T>(0.5);
    const T centred = scale * (static_cast<T>(o) + half) - half;
    const T source = align ? scale * static_cast<T>(o) : centred;
    if (mode == InterpolateMode::Nearest) {
      taps[o] = {{std::min<int64_t>(std::floor(static_cast<float>(scale * static_cast<T>(o))), in - 1), 1.0}};
    } else if (mode == InterpolateMode::NearestExact) {
      const T clamped = centred < 0 ? T(0) : centred;
      taps[o] = {{std::min<int64_t>(std::floor(static_cast<float>(clamped + half)), in - 1), 1.0}};
    } else if (mode == InterpolateMode::Area) {
      const int64_t start = o * in / out;
      const int64_t end = ((o + 1) * in + out - 1) / out;
      for (int64_t i = start; i < end; ++i) taps[o].push_back({i, 1.0 / static_cast<double>(end - start)});
    } else if (mode == InterpolateMode::Bicubic) {
      const int64_t index = std::min<int64_t>(std::floor(static_cast<float>(source)), in - 1);
      const T t = std::clamp(source - static_cast<T>(index), T(0), T(1));
      const T a = static_cast<T>(-0.75);
      auto near = [&](T x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
      auto far = [&](T x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
      const T weights[4] = {far(t + T(1)), near(t), near(T(1) - t), far(T(1) - t + T(1))};
      for (int j = 0; j < 4; ++j) taps[o].push_back({std::clamp<int64_t>(index - 1 + j, 0, in - 1), weights[j]});
    } else if (in == out) {  // linear modes copy a dim whose size does not change
      taps[o] = {{o, 1.0}};
    } else {
      const T position = align ? source : std::max(centred, T(0));
      const int64_t first = std::min<int64_t>(static_cast<int64_t>(position), in - 1);
      const T lambda = std::clamp(position - static_cast<T>(first), T(0), T(1));
      taps[o] = {{first, static_cast<double>(T(1) - lambda)}, {std::min(first + 1, in - 1), lambda}};
    }
  }
  return taps;
}

Dims dims_between(const Dims& dims, int first, int last);

// The float64 reference of one call: per output element, the sum over every combination of its
// dims' taps of the product of their weights times that input element.
struct Call {
  Dims shape;  // [N, C, S...]
  InterpolateMode mode;
  std::optional<Dims> size;
  std::optional<std::vector<double>> scale;
  std::optional<bool> align_corners;
  std::optional<bool> recompute = std::nullopt;
};

template <typename T>
std::vector<double> reference(const Call& call, const std::vector<double>& input, Dims& out_shape) {
  const int spatial = call.shape.size() - 2;
  std::vector<PositionTaps> taps;
  out_shape = {call.shape[0], call.shape[1]};
  for (int d = 0; d < spatial; ++d) {
    const int64_t in = call.shape[2 + d];
    std::optional<double> factor;
    int64_t out = 0;
    if (call.size) {
      out = call.size->size() == 1 ? (*call.size)[0] : (*call.size)[d];
    } else {
      const double value = call.scale->size() == 1 ? (*call.scale)[0] : (*call.scale)[d];
      out = static_cast<int64_t>(static_cast<double>(in) * value);
      if (!call.recompute.value_or(false)) factor = value;
    }
    taps.push_back(reference_taps<T>(call.mode, in, out, call.align_corners.value_or(false), factor));
    out_shape.push_back(out);
  }
  const int64_t planes = call.shape[0] * call.shape[1];
  const Dims in_spatial = dims_between(call.shape, 2, call.shape.size());
  const Dims out_spatial = dims_between(out_shape, 2, out_shape.size());
  std::vector<double> result;
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t flat = 0; flat < out_spatial.product(); ++flat) {
      Dims position = Dims::filled(spatial, 0);
      for (int64_t rest = flat, d = spatial - 1; d >= 0; --d)
        position[d] = rest % out_spatial[d], rest /= out_spatial[d];
      Dims choice = Dims::filled(spatial, 0);  // an odometer over the tap combinations
      double total = 0.0;
      while (true) {
        double weight = 1.0;
        int64_t offset = 0;
        for (int d = 0; d < spatial; ++d) {
          const Tap& tap = taps[d][position[d]][choice[d]];
          weight *= tap.weight;
          offset = offset * in_spatial[d] + tap.index;
        }
        total += weight * input[plane * in_spatial.product() + offset];
        int d = spatial - 1;
        while (d >= 0 && ++choice[d] == static_cast<int64_t>(taps[d][position[d]].size())) choice[d--] = 0;
        if (d < 0) break;
      }
      result.push_back(total);
    }
  }
  return result;
}

// Dims first .. last - 1 of `dims`.
Dims dims_between(const Dims& dims, int first, int last) {
  return Dims(std::span<const int64_t>(dims.begin() + first, dims.begin() + last));
}

F::InterpolateOptions options_of(const Call& call) {
  F::InterpolateOptions options{
      .mode = call.mode, .align_corners = call.align_corners, .recompute_scale_factor = call.recompute};
  if (call.size) options.size = *call.size;
  if (!call.scale) return options;
  const std::vector<double>& scale = *call.scale;
  if (scale.size() == 1) options.scale_factor = scale[0];
  if (scale.size() == 2) options.scale_factor = F::ScaleFactors{scale[0], scale[1]};
  if (scale.size() == 3) options.scale_factor = F::ScaleFactors{scale[0], scale[1], scale[2]};
  return options;
}

// interpolate(input) in float64 and float32 against the reference in the matching opmath type; the
// nearest modes must pick exactly the reference's elements.
void check_call(const Call& call, uint32_t seed) {
  INFO(fmt::format("mode {}, input {}", F::interpolate_mode_name(call.mode), call.shape));
  const bool gather = call.mode == InterpolateMode::Nearest || call.mode == InterpolateMode::NearestExact;
  for (const DType dtype : {kFloat64, kFloat32}) {
    const Tensor input = small_tensor(call.shape, seed, dtype);
    const Tensor result = F::interpolate(input, options_of(call));
    Dims out_shape;
    const std::vector<double> expected = dtype == kFloat64 ? reference<double>(call, values_of(input), out_shape)
                                                           : reference<float>(call, values_of(input), out_shape);
    REQUIRE(result.sizes() == out_shape);
    CHECK(result.dtype() == dtype);
    const std::vector<double> actual = values_of(result);
    const double tolerance = gather ? 0.0 : dtype == kFloat64 ? 1e-13 : 2e-6;
    double worst = 0.0;
    for (size_t i = 0; i < actual.size(); ++i) worst = std::max(worst, std::abs(actual[i] - expected[i]));
    CHECK(worst <= tolerance);
  }
}

}  // namespace

TEST_CASE("interpolate: nearest and nearest-exact pick PyTorch's elements in 1-D, 2-D and 3-D") {
  for (const InterpolateMode mode : {InterpolateMode::Nearest, InterpolateMode::NearestExact}) {
    check_call({{2, 3, 5}, mode, Dims{12}, {}, {}}, 1);                        // up by size
    check_call({{2, 3, 12}, mode, Dims{5}, {}, {}}, 2);                        // down by size
    check_call({{1, 2, 7}, mode, {}, std::vector<double>{1.7}, {}}, 3);        // 1 / scale_factor
    check_call({{1, 2, 7}, mode, {}, std::vector<double>{1.7}, {}, true}, 4);  // recomputed: 7 / 11
    check_call({{2, 2, 4, 6}, mode, Dims{7, 3}, {}, {}}, 5);
    check_call({{1, 3, 5, 4}, mode, {}, std::vector<double>{0.6, 2.5}, {}}, 6);
    check_call({{1, 2, 3, 4, 5}, mode, {}, std::vector<double>{2.0, 0.5, 1.3}, {}}, 7);
    check_call({{2, 1, 1, 3, 1}, mode, Dims{4, 1, 3}, {}, {}}, 8);  // size-1 dims both ways
  }
}

TEST_CASE("interpolate: linear, bilinear, trilinear and bicubic equal PyTorch's formula, align_corners both ways") {
  for (const bool align : {false, true}) {
    check_call({{2, 3, 5}, InterpolateMode::Linear, Dims{11}, {}, align}, 11);
    check_call({{2, 3, 11}, InterpolateMode::Linear, Dims{4}, {}, align}, 12);
    check_call({{1, 2, 6}, InterpolateMode::Linear, {}, std::vector<double>{1.45}, align}, 13);
    check_call({{1, 2, 6}, InterpolateMode::Linear, {}, std::vector<double>{1.45}, align, true}, 14);
    check_call({{1, 2, 1}, InterpolateMode::Linear, Dims{4}, {}, align}, 15);  // a size-1 input dim
    check_call({{1, 2, 5}, InterpolateMode::Linear, Dims{1}, {}, align}, 16);  // a size-1 output dim
    check_call({{2, 2, 4, 5}, InterpolateMode::Bilinear, Dims{7, 3}, {}, align}, 17);
    check_call({{1, 3, 5, 4}, InterpolateMode::Bilinear, {}, std::vector<double>{0.7, 2.3}, align}, 18);
    check_call({{1, 2, 4, 4}, InterpolateMode::Bilinear, Dims{4, 9}, {}, align}, 19);  // one dim unchanged
    check_call({{1, 2, 3, 4, 2}, InterpolateMode::Trilinear, Dims{5, 3, 4}, {}, align}, 20);
    check_call({{1, 1, 3, 2, 4}, InterpolateMode::Trilinear, {}, std::vector<double>{1.5, 2.0, 0.75}, align}, 21);
    check_call({{2, 2, 4, 5}, InterpolateMode::Bicubic, Dims{9, 3}, {}, align}, 22);
    check_call({{1, 2, 6, 3}, InterpolateMode::Bicubic, {}, std::vector<double>{0.6, 2.7}, align}, 23);
    check_call({{1, 1, 1, 5}, InterpolateMode::Bicubic, Dims{3, 1}, {}, align}, 24);
  }
  // A scale_factor whose output keeps the size: 1 / 1.05 samples, unlike recomputing (a copy).
  check_call({{1, 2, 10}, InterpolateMode::Linear, {}, std::vector<double>{1.05}, false}, 25);
  check_call({{1, 2, 10, 3}, InterpolateMode::Bicubic, {}, std::vector<double>{1.05, 1.0}, false}, 26);
}

TEST_CASE("interpolate: area is adaptive average pooling to the output size") {
  check_call({{2, 3, 7}, InterpolateMode::Area, Dims{3}, {}, {}}, 31);
  check_call({{1, 2, 5, 6}, InterpolateMode::Area, {}, std::vector<double>{0.5, 0.7}, {}}, 32);
  check_call({{1, 2, 3, 5, 4}, InterpolateMode::Area, Dims{2, 5, 3}, {}, {}}, 33);
}

TEST_CASE("interpolate: nearest rounds its source index as PyTorch: float32 opmath, float before floorf") {
  // Size 6 -> 74: the scale 6/74 rounds down in float32, so output 37 reads element 2 (37 * 6 / 74
  // = 3 exactly, and float64 gets 3). Values from PyTorch's formula evaluated in Python.
  for (const DType dtype : {kFloat32, kFloat64}) {
    const Tensor input = arange(6.0, {.dtype = dtype}).reshape({1, 1, 6});
    const std::vector<double> picked = values_of(F::interpolate(input, {.size = 74}));
    CHECK(picked[36] == 2.0);
    CHECK(picked[37] == (dtype == kFloat32 ? 2.0 : 3.0));
  }
  // Size 2 -> 98, float64: 49 * (2 / 98) = 0.9999999999999999 in float64, which floorf (a float
  // argument) rounds to 1 first, so output 49 reads element 1 in both dtypes.
  for (const DType dtype : {kFloat32, kFloat64}) {
    const std::vector<double> picked =
        values_of(F::interpolate(arange(2.0, {.dtype = dtype}).reshape({1, 1, 2}), {.size = 98}));
    CHECK(picked[48] == 0.0);
    CHECK(picked[49] == 1.0);
  }
  // scale_factor 2.2 on 16 elements: output 33 reads floor(33 * float32(1 / 2.2)) = 15.
  const std::vector<double> picked = values_of(F::interpolate(arange(16.0).reshape({1, 1, 16}), {.scale_factor = 2.2}));
  REQUIRE(picked.size() == 35);
  CHECK(picked[33] == 15.0);
}

TEST_CASE("interpolate: integer nearest scale factors repeat each element, strided inputs read correctly") {
  const Tensor input = small_tensor({2, 3, 4, 5}, 41);
  const Tensor repeated = input.unsqueeze(3).unsqueeze(5).expand({2, 3, 4, 2, 5, 3}).reshape({2, 3, 8, 15});
  CHECK(values_of(F::interpolate(input, {.scale_factor = F::ScaleFactors{2.0, 3.0}})) == values_of(repeated));
  // Channels-last (an NHWC tensor permuted) and transposed inputs give the contiguous input's result.
  const Tensor nhwc = small_tensor({2, 4, 5, 3}, 42);
  const Tensor channels_last = nhwc.permute({0, 3, 1, 2});
  const Tensor transposed = small_tensor({2, 3, 5, 4}, 43).transpose(2, 3);
  for (const InterpolateMode mode :
       {InterpolateMode::Nearest, InterpolateMode::Bilinear, InterpolateMode::Bicubic, InterpolateMode::Area}) {
    INFO(std::string(F::interpolate_mode_name(mode)));
    for (const Tensor& strided : {channels_last, transposed}) {
      REQUIRE(!strided.is_contiguous());
      const F::InterpolateOptions options{.size = SpatialDims{7, 3}, .mode = mode};
      const std::vector<double> expected = values_of(F::interpolate(strided.contiguous(), options));
      const std::vector<double> actual = values_of(F::interpolate(strided, options));
      for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-14));
    }
  }
}

TEST_CASE("interpolate: other dtypes, an empty batch, and a new tensor even when nothing changes") {
  const Tensor input = small_tensor({1, 2, 4, 3}, 51);
  const F::InterpolateOptions bilinear{.size = SpatialDims{5, 7}, .mode = InterpolateMode::Bilinear};
  const std::vector<double> in_float32 = values_of(F::interpolate(input.to(kFloat32), bilinear));
  for (const DType low : {kFloat16, kBFloat16}) {
    const Tensor result = F::interpolate(input.to(low), bilinear);
    CHECK(result.dtype() == low);
    const std::vector<double> expected = values_of(F::interpolate(input.to(low).to(kFloat32), bilinear).to(low));
    CHECK(values_of(result) == expected);  // computed in float32, rounded once
    for (size_t i = 0; i < expected.size(); ++i) CHECK(std::abs(expected[i] - in_float32[i]) < 2e-2);
  }
  const Tensor integers = arange(12.0, {.dtype = kInt64}).reshape({1, 1, 3, 4});
  const Tensor picked = F::interpolate(integers, {.scale_factor = 2.0});
  CHECK(picked.dtype() == kInt64);
  CHECK(values_of(picked) == values_of(F::interpolate(integers.to(kFloat64), {.scale_factor = 2.0})));
  CHECK(F::interpolate(zeros({0, 2, 3}), {.size = 5, .mode = InterpolateMode::Linear}).sizes() == Dims{0, 2, 5});
  const Tensor same = F::interpolate(input, {.size = SpatialDims{4, 3}, .mode = InterpolateMode::Bilinear});
  CHECK(values_of(same) == values_of(input));
  CHECK(same.data_ptr<double>() != input.data_ptr<double>());
}

TEST_CASE("interpolate: gradients of nearest, linear modes and bicubic equal central differences") {
  auto check_gradient = [](const Dims& shape, const F::InterpolateOptions& options, uint32_t seed) {
    INFO(fmt::format("{} {}", F::interpolate_mode_name(options.mode), shape));
    gradcheck_leaves([&](const std::vector<Tensor>& x) { return F::interpolate(x[0], options); },
              {small_tensor(shape, seed).requires_grad_()});
  };
  check_gradient({1, 2, 5}, {.size = 12}, 61);
  check_gradient({1, 2, 7, 4}, {.scale_factor = F::ScaleFactors{0.6, 1.7}}, 62);
  check_gradient({1, 2, 7, 4}, {.size = SpatialDims{3, 9}, .mode = InterpolateMode::NearestExact}, 63);
  for (const bool align : {false, true}) {
    check_gradient({1, 2, 4, 5}, {.size = SpatialDims{7, 3}, .mode = InterpolateMode::Bilinear, .align_corners = align},
                   64);
    check_gradient(
        {1, 1, 5, 3},
        {.scale_factor = F::ScaleFactors{0.7, 2.5}, .mode = InterpolateMode::Bicubic, .align_corners = align}, 65);
    check_gradient({1, 1, 2, 3, 2},
                   {.size = SpatialDims{3, 2, 4}, .mode = InterpolateMode::Trilinear, .align_corners = align}, 66);
  }
}

TEST_CASE("pixel_shuffle and pixel_unshuffle: PyTorch's element order, inverse of each other") {
  for (const Dims& shape : {Dims{8, 2, 3}, Dims{2, 18, 2, 3}, Dims{2, 1, 4, 1, 2}}) {
    const int64_t r = shape[shape.size() - 3] % 9 == 0 ? 3 : 2;
    const Tensor input = small_tensor(shape, 71);
    const Tensor shuffled = F::pixel_shuffle(input, r);
    const int lead = shape.size() - 3;
    const int64_t channels = shape[lead] / (r * r);
    const int64_t height = shape[lead + 1];
    const int64_t width = shape[lead + 2];
    Dims expected_shape = dims_between(shape, 0, lead);
    for (const int64_t size : {channels, height * r, width * r}) expected_shape.push_back(size);
    REQUIRE(shuffled.sizes() == expected_shape);
    const std::vector<double> in = values_of(input);
    const std::vector<double> out = values_of(shuffled);
    const int64_t batches = dims_between(shape, 0, lead).product();
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t y = 0; y < height * r; ++y)
          for (int64_t x = 0; x < width * r; ++x) {
            const int64_t source_channel = c * r * r + (y % r) * r + x % r;
            const double expected = in[((b * shape[lead] + source_channel) * height + y / r) * width + x / r];
            CHECK(out[((b * channels + c) * height * r + y) * width * r + x] == expected);
          }
    const Tensor back = F::pixel_unshuffle(shuffled, r);
    CHECK(back.sizes() == input.sizes());
    CHECK(values_of(back) == in);
  }
  gradcheck_leaves([](const std::vector<Tensor>& x) { return F::pixel_unshuffle(x[0], 2); },
            {small_tensor({1, 2, 4, 6}, 72).requires_grad_()});
}

TEST_CASE("upsampling modules: forward is F's, reprs are PyTorch's") {
  const Tensor input = small_tensor({1, 2, 3, 4}, 81);
  nn::Upsample up({.scale_factor = 2.0});
  CHECK(up->str() == "Upsample(scale_factor=2.0, mode='nearest')");
  CHECK(values_of(up(input)) == values_of(F::interpolate(input, {.scale_factor = 2.0})));
  nn::Upsample sized({.size = SpatialDims{5, 7}, .mode = InterpolateMode::Bicubic, .align_corners = true});
  CHECK(sized->str() == "Upsample(size=(5, 7), mode='bicubic')");
  CHECK(values_of(sized(input)) ==
        values_of(F::interpolate(
            input, {.size = SpatialDims{5, 7}, .mode = InterpolateMode::Bicubic, .align_corners = true})));
  CHECK(nn::Upsample({.size = 4, .mode = InterpolateMode::NearestExact})->str() ==
        "Upsample(size=4, mode='nearest-exact')");
  CHECK(nn::Upsample({.scale_factor = F::ScaleFactors{1.5, 2.0}})->str() ==
        "Upsample(scale_factor=(1.5, 2.0), mode='nearest')");
  nn::UpsamplingBilinear2d bilinear({.scale_factor = 2.0});
  CHECK(bilinear->str() == "UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')");
  CHECK(values_of(bilinear(input)) ==
        values_of(
            F::interpolate(input, {.scale_factor = 2.0, .mode = InterpolateMode::Bilinear, .align_corners = true})));
  nn::UpsamplingNearest2d nearest({.size = SpatialDims{6, 8}});
  CHECK(nearest->str() == "UpsamplingNearest2d(size=(6, 8), mode='nearest')");
  CHECK(values_of(nearest(input)) == values_of(F::interpolate(input, {.size = SpatialDims{6, 8}})));
  nn::PixelShuffle shuffle(3);
  CHECK(shuffle->str() == "PixelShuffle(upscale_factor=3)");
  nn::PixelUnshuffle unshuffle(2);
  CHECK(unshuffle->str() == "PixelUnshuffle(downscale_factor=2)");
  const Tensor channels = small_tensor({1, 9, 2, 2}, 82);
  CHECK(values_of(shuffle(channels)) == values_of(F::pixel_shuffle(channels, 3)));
  CHECK(values_of(nn::PixelUnshuffle(3)(shuffle(channels))) == values_of(channels));
}

TEST_CASE("interpolate and pixel_shuffle errors are PyTorch's and name the caller's line") {
  const Tensor x3 = small_tensor({1, 2, 4}, 91);
  const Tensor x4 = small_tensor({1, 2, 4, 4}, 92);
  const Tensor x5 = small_tensor({1, 1, 2, 2, 2}, 93);
  const Tensor integers = zeros({1, 1, 4}, {.dtype = kInt64});
  const Tensor x2 = small_tensor({2, 4}, 94);
  const Tensor no_channels = zeros({1, 0, 4});
  const Tensor odd_channels = small_tensor({1, 6, 2, 2}, 96);
  const Tensor odd_height = small_tensor({1, 1, 3, 4}, 97);
  const Tensor odd_width = small_tensor({1, 1, 4, 3}, 98);
  using Mode = InterpolateMode;
  // One call per line, so that each message must name its own line.
  // clang-format off
  const int line = __LINE__ + 2;
  const std::vector<std::string> messages{
      error_of([&] { F::interpolate(x4, {.scale_factor = 2.0, .mode = Mode::Bilinear, .antialias = true}); }),
      error_of([&] { F::interpolate(x4, {.scale_factor = 2.0, .align_corners = false}); }),
      error_of([&] { F::interpolate(x4, {.scale_factor = 2.0, .mode = Mode::Area, .align_corners = true}); }),
      error_of([&] { F::interpolate(x2, {.size = 3}); }),
      error_of([&] { F::interpolate(x3, {.size = 3, .mode = Mode::Bilinear}); }),
      error_of([&] { F::interpolate(x4, {.size = 3, .mode = Mode::Trilinear}); }),
      error_of([&] { F::interpolate(x5, {.size = 3, .mode = Mode::Bicubic}); }),
      error_of([&] { F::interpolate(x4, {.size = 3, .scale_factor = 2.0}); }),
      error_of([&] { F::interpolate(x4, {}); }),
      error_of([&] { F::interpolate(x4, {.size = 3, .recompute_scale_factor = true}); }),
      error_of([&] { F::interpolate(x4, {.size = SpatialDims{3, 4, 5}}); }),
      error_of([&] { F::interpolate(x4, {.scale_factor = F::ScaleFactors{2.0, 2.0, 2.0}}); }),
      error_of([&] { F::interpolate(x4, {.scale_factor = 0.1}); }),
      error_of([&] { F::interpolate(x4, {.size = SpatialDims{3, -1}}); }),
      error_of([&] { F::interpolate(no_channels, {.size = 3}); }),
      error_of([&] { F::interpolate(integers, {.size = 3, .mode = Mode::Linear}); }),
      error_of([&] { F::interpolate(x3, {.scale_factor = std::nan("")}); }),
      error_of([&] { F::pixel_shuffle(x2, 2); }),
      error_of([&] { F::pixel_shuffle(x4, 0); }),
      error_of([&] { F::pixel_shuffle(odd_channels, 2); }),
      error_of([&] { F::pixel_unshuffle(x4, -1); }),
      error_of([&] { F::pixel_unshuffle(odd_height, 2); }),
      error_of([&] { F::pixel_unshuffle(odd_width, 2); }),
      error_of([&] { nn::Upsample()(x4); }),
  };
  // clang-format on
  const std::vector<std::string> expected{
      "interpolate: antialias=True is not supported by ember",
      "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear, "
      "got mode 'nearest'",
      "got mode 'area'",
      "Only 3D, 4D and 5D input Tensors supported (got 2D, shape [2, 4])",
      "Got 3D input (shape [1, 2, 4]), but bilinear mode needs 4D input",
      "Got 4D input (shape [1, 2, 4, 4]), but trilinear mode needs 5D input",
      "Got 5D input (shape [1, 1, 2, 2, 2]), but bicubic mode needs 4D input",
      "only one of size or scale_factor should be defined",
      "either size or scale_factor should be defined",
      "recompute_scale_factor is not meaningful with an explicit size.",
      "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of "
      "[4, 4] and output size of [3, 4, 5]",
      "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions "
      "of [4, 4] and scale_factor of shape [2, 2, 2]",
      "Input and output sizes should be greater than 0, but got input [4, 4] and output [0, 0]",
      "Input and output sizes should be greater than 0, but got input [4, 4] and output [3, -1]",
      "Non-empty 3D data tensor expected but got a tensor with sizes [1, 0, 4]",
      "interpolate: mode 'linear' needs a floating-point input, got int64",
      "is not an int64 value",
      "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)",
      "pixel_shuffle expects a positive upscale_factor, but got 0",
      "input.size(-3)=6 is not divisible by 4",
      "pixel_unshuffle expects a positive downscale_factor, but got -1",
      "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=3 is not divisible by 2",
      "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=3 is not divisible by 2",
      "either size or scale_factor should be defined",
  };
  check_messages_name_lines(messages, expected, line);
}

}  // namespace test_interpolate
