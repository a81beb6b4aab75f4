// Pooling's values and indices (runtime/functional_pool.h) against float64 loops over each window
// (pool_reference.h): max, avg and adaptive pools in 1-D, 2-D and 3-D, strides, paddings,
// dilations and ceil_mode, batched and unbatched, float64, bf16 and integer inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "pool_reference.h"
#include "runtime/ember.h"
#include "runtime/functional_pool.h"

namespace test_pooling {

using namespace ember;
using ember::testing::PoolGeometry;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> indices_of(const Tensor& indices) {
  REQUIRE(indices.dtype() == kInt64);
  return indices.contiguous().to_vector<int64_t>();
}

Dims output_shape(const Tensor& input, int spatial, const PoolGeometry& geometry) {
  return ember::testing::pool_layout(input.sizes(), spatial, geometry).output_shape;
}

MaxPoolOptions max_options(const PoolGeometry& geometry) {
  return {.stride = geometry.stride, .padding = geometry.padding, .dilation = geometry.dilation,
          .ceil_mode = geometry.ceil_mode};
}

std::tuple<Tensor, Tensor> max_pool_with_indices(int spatial, const Tensor& input, const PoolGeometry& geometry) {
  const MaxPoolOptions options = max_options(geometry);
  if (spatial == 1) return max_pool1d_with_indices(input, geometry.kernel, options);
  if (spatial == 2) return max_pool2d_with_indices(input, geometry.kernel, options);
  return max_pool3d_with_indices(input, geometry.kernel, options);
}

Tensor avg_pool(int spatial, const Tensor& input, const PoolGeometry& geometry, bool count_include_pad,
                std::optional<int64_t> divisor_override = std::nullopt) {
  const AvgPoolOptions options{.stride = geometry.stride, .padding = geometry.padding,
                               .ceil_mode = geometry.ceil_mode, .count_include_pad = count_include_pad,
                               .divisor_override = divisor_override};
  if (spatial == 1) return avg_pool1d(input, geometry.kernel, options);
  if (spatial == 2) return avg_pool2d(input, geometry.kernel, options);
  return avg_pool3d(input, geometry.kernel, options);
}

struct MaxCase {
  int spatial;
  Dims input;
  PoolGeometry geometry;
};

// Kernels, strides, paddings (up to what PyTorch allows), dilations and ceil_mode, including
// windows that run past the padding with ceil_mode and unbatched inputs.
const std::vector<MaxCase> kMaxCases = {
    {1, {2, 3, 9}, {.kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {1}}},
    {1, {2, 3, 9}, {.kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {2}, .ceil_mode = true}},
    {1, {2, 3, 9}, {.kernel = {4}, .stride = {3}, .padding = {2}, .dilation = {1}, .ceil_mode = true}},
    {1, {1, 2, 6}, {.kernel = {2}, .stride = {}, .padding = {0}, .dilation = {1}}},
    {1, {2, 2, 11}, {.kernel = {5}, .stride = {1}, .padding = {2}, .dilation = {2}}},
    {1, {3, 10}, {.kernel = {3}, .stride = {3}, .padding = {1}, .dilation = {1}, .ceil_mode = true}},
    {2, {2, 2, 7, 6}, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .dilation = {1}}},
    {2, {2, 2, 7, 6}, {.kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {2}, .ceil_mode = true}},
    {2, {1, 3, 8, 7}, {.kernel = {2, 3}, .stride = {3, 2}, .padding = {1, 1}, .dilation = {2, 1}, .ceil_mode = true}},
    {2, {2, 5, 5}, {.kernel = {2}, .stride = {2}, .padding = {0}, .dilation = {1}, .ceil_mode = true}},
    // padding 2 for kernel 2: allowed in 2-D alone, which halves the dilated kernel (4)
    {2, {1, 1, 6, 6}, {.kernel = {2}, .stride = {1}, .padding = {2}, .dilation = {3}}},
    {3, {1, 2, 5, 6, 4}, {.kernel = {2, 3, 2}, .stride = {2, 2, 1}, .padding = {1, 1, 0}, .dilation = {1, 1, 2},
                          .ceil_mode = true}},
    {3, {2, 1, 4, 4, 4}, {.kernel = {2}, .stride = {}, .padding = {0}, .dilation = {1}}},
    {3, {2, 3, 5, 4}, {.kernel = {3, 2, 2}, .stride = {1, 2, 2}, .padding = {1, 1, 1}, .dilation = {1},
                       .ceil_mode = true}},
};

}  // namespace

TEST_CASE("max_pool1d/2d/3d: values and indices equal a float64 scan of each window") {
  uint32_t seed = 1;
  for (const MaxCase& c : kMaxCases) {
    INFO(fmt::format("input {}, kernel {}, stride {}, padding {}, dilation {}, ceil_mode {}", c.input,
                     c.geometry.kernel, c.geometry.stride, c.geometry.padding, c.geometry.dilation,
                     c.geometry.ceil_mode));
    const Tensor input = small_tensor(c.input, seed++);
    const auto expected = ember::testing::reference_max_pool(input, c.spatial, c.geometry);
    const auto [values, indices] = max_pool_with_indices(c.spatial, input, c.geometry);
    CHECK(values.sizes() == output_shape(input, c.spatial, c.geometry));
    CHECK(indices.sizes() == values.sizes());
    CHECK(values_of(values) == expected.values);
    CHECK(indices_of(indices) == expected.indices);
    // Without indices: the same values.
    const MaxPoolOptions options = max_options(c.geometry);
    const Tensor alone = c.spatial == 1   ? max_pool1d(input, c.geometry.kernel, options)
                         : c.spatial == 2 ? max_pool2d(input, c.geometry.kernel, options)
                                          : max_pool3d(input, c.geometry.kernel, options);
    CHECK(values_of(alone) == expected.values);
  }
}

TEST_CASE("max_pool: ties pick the first maximum, NaN the last NaN, an all -inf window its first element") {
  // Rows of a 4 x 4 plane, pooled 2 x 2 with stride 1: every window holds a tie or a NaN.
  const double nan = std::nan("");
  const Tensor input = ember::testing::doubles({1, 5, 5, 2,  //
                                                5, 5, 0, 2,  //
                                                nan, 3, nan, 2,  //
                                                -kInf, -kInf, nan, -kInf},
                                               {1, 1, 4, 4});
  const PoolGeometry geometry{.kernel = {2}, .stride = {1}, .padding = {1}, .dilation = {1}};
  const auto expected = ember::testing::reference_max_pool(input, 2, geometry);
  const auto [values, indices] = max_pool2d_with_indices(input, 2, {.stride = 1, .padding = 1});
  ember::testing::check_exactly_or_nan(values, expected.values);
  CHECK(indices_of(indices) == expected.indices);
  // Spot checks worked by hand: window (1, 1) (rows 0-1, cols 0-1) holds 1, 5 / 5, 5: the first 5,
  // index 1; window (3, 2) (rows 2-3, cols 1-2) holds 3, nan / -inf, nan: the last NaN, index 14.
  const std::vector<int64_t> chosen = indices_of(indices);
  CHECK(chosen[1 * 5 + 1] == 1);
  CHECK(chosen[3 * 5 + 2] == 14);

  // All -inf with padding: the window's first element inside the input, never the padding.
  const Tensor lows = full({1, 1, 3, 3}, -kInf, {.dtype = kFloat64});
  const auto [low_values, low_indices] = max_pool2d_with_indices(lows, 3, {.stride = 2, .padding = 1});
  CHECK(indices_of(low_indices) == std::vector<int64_t>{0, 1, 3, 4});
  CHECK(values_of(low_values) == std::vector<double>(4, -kInf));
}

TEST_CASE("max_pool2d: a window holding only padding gives -inf and index -1") {
  // H = 1, kernel 2, dilation 2, padding 1: the window reads rows -1 and 1, both padding (PyTorch's
  // check allows it, its index then points past the plane).
  const Tensor input = small_tensor({1, 1, 1, 3}, 5);
  const auto [values, indices] = max_pool2d_with_indices(input, {2, 1}, {.padding = {1, 0}, .dilation = {2, 1}});
  CHECK(values.sizes() == Dims{1, 1, 1, 3});
  CHECK(values_of(values) == std::vector<double>(3, -kInf));
  CHECK(indices_of(indices) == std::vector<int64_t>(3, -1));
}

TEST_CASE("max_pool: integer inputs pad with their lowest value, bf16 picks exactly") {
  const Tensor input = from_vector<int64_t>({-7, 3, 9, -2, 4, 4, 0, -9, 8, 1, -5, 6}, {1, 2, 6}, {.dtype = kInt64});
  const PoolGeometry geometry{.kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {1}, .ceil_mode = true};
  const auto expected = ember::testing::reference_max_pool(input, 1, geometry);
  const auto [values, indices] = max_pool1d_with_indices(input, 3, {.stride = 2, .padding = 1, .ceil_mode = true});
  CHECK(values.dtype() == kInt64);
  CHECK(values_of(values) == expected.values);
  CHECK(indices_of(indices) == expected.indices);
  const Tensor int32_values = max_pool1d(input.to(kInt32), 3, {.stride = 2, .padding = 1, .ceil_mode = true});
  CHECK(int32_values.dtype() == kInt32);
  CHECK(values_of(int32_values) == expected.values);

  // bf16: the reference runs on the bf16 values themselves, so the max is exact.
  const Tensor low = small_tensor({2, 3, 6, 5}, 11, kBFloat16);
  const PoolGeometry square{.kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {1}, .ceil_mode = true};
  const auto bf16_expected = ember::testing::reference_max_pool(low, 2, square);
  const auto [bf16_values, bf16_indices] =
      max_pool2d_with_indices(low, 3, {.stride = 2, .padding = 1, .ceil_mode = true});
  CHECK(bf16_values.dtype() == kBFloat16);
  CHECK(values_of(bf16_values) == bf16_expected.values);
  CHECK(indices_of(bf16_indices) == bf16_expected.indices);
}

TEST_CASE("avg_pool1d/2d/3d: PyTorch's divisors with padding, ceil_mode, count_include_pad and divisor_override") {
  struct AvgCase {
    int spatial;
    Dims input;
    PoolGeometry geometry;
    std::optional<int64_t> divisor_override;
  };
  const std::vector<AvgCase> cases = {
      {1, {2, 3, 9}, {.kernel = {3}, .stride = {2}, .padding = {1}, .ceil_mode = true}, {}},
      {1, {2, 3, 9}, {.kernel = {4}, .stride = {3}, .padding = {2}, .ceil_mode = true}, {}},
      {1, {2, 6}, {.kernel = {3}, .stride = {2}, .padding = {0}, .ceil_mode = true}, {}},  // past the end
      {1, {1, 2, 7}, {.kernel = {2}, .stride = {}, .padding = {0}}, {}},
      {2, {2, 2, 6, 6}, {.kernel = {3}, .stride = {2}, .padding = {1}, .ceil_mode = true}, {}},
      {2, {2, 2, 7, 6}, {.kernel = {3, 2}, .stride = {2, 3}, .padding = {1, 1}}, 5},
      {2, {2, 5, 5}, {.kernel = {2}, .stride = {2}, .padding = {0}, .ceil_mode = true}, {}},
      {3, {1, 2, 5, 6, 4}, {.kernel = {2, 3, 2}, .stride = {2, 2, 1}, .padding = {1, 1, 0}, .ceil_mode = true}, {}},
      {3, {2, 4, 5, 4}, {.kernel = {3, 2, 2}, .stride = {1, 2, 2}, .padding = {1}, .ceil_mode = true}, -7},
  };
  uint32_t seed = 40;
  for (const AvgCase& c : cases)
    for (const bool count_include_pad : {true, false}) {
      INFO(fmt::format("input {}, kernel {}, stride {}, padding {}, ceil_mode {}, count_include_pad {}", c.input,
                       c.geometry.kernel, c.geometry.stride, c.geometry.padding, c.geometry.ceil_mode,
                       count_include_pad));
      const Tensor input = small_tensor(c.input, seed++);
      const Tensor result = avg_pool(c.spatial, input, c.geometry, count_include_pad, c.divisor_override);
      CHECK(result.sizes() == output_shape(input, c.spatial, c.geometry));
      ember::testing::check_values_close(
          result, ember::testing::reference_avg_pool(input, c.spatial, c.geometry, count_include_pad,
                                                     c.divisor_override),
          1e-12);
    }
}

TEST_CASE("avg_pool: bf16 is summed in float32 and rounded once, float32 stays float32") {
  const Tensor input = small_tensor({2, 3, 7, 6}, 77, kBFloat16);
  const PoolGeometry geometry{.kernel = {3}, .stride = {2}, .padding = {1}, .ceil_mode = true};
  const Tensor result = avg_pool2d(input, 3, {.stride = 2, .padding = 1, .ceil_mode = true});
  CHECK(result.dtype() == kBFloat16);
  // One rounding of the exact mean: within bf16's half ulp (2^-9 relative).
  ember::testing::check_values_close(result, ember::testing::reference_avg_pool(input, 2, geometry, true, {}),
                                     std::ldexp(1.0, -8));
  const Tensor single = avg_pool1d(small_tensor({2, 9}, 78, kFloat32), 3);
  CHECK(single.dtype() == kFloat32);
}

TEST_CASE("adaptive pools: PyTorch's floor/ceil windows, overlapping where the output does not divide") {
  struct AdaptiveCase {
    int spatial;
    Dims input;
    Dims output;
  };
  const std::vector<AdaptiveCase> cases = {
      {1, {2, 3, 10}, {4}}, {1, {2, 3, 10}, {3}},       {1, {2, 3, 10}, {10}},       {1, {3, 5}, {8}},
      {1, {1, 2, 7}, {1}},  {2, {2, 2, 7, 5}, {3, 4}}, {2, {2, 2, 7, 5}, {7, 5}},   {2, {3, 6, 9}, {1, 1}},
      {2, {1, 2, 5, 4}, {2}}, {3, {1, 2, 5, 4, 6}, {2, 3, 4}}, {3, {2, 3, 4, 5}, {3, 1, 2}},
  };
  uint32_t seed = 90;
  for (const AdaptiveCase& c : cases) {
    INFO(fmt::format("input {}, output_size {}", c.input, c.output));
    const Tensor input = small_tensor(c.input, seed++);
    const auto average = ember::testing::reference_adaptive_pool(input, c.spatial, c.output, /*max=*/false);
    const auto maximum = ember::testing::reference_adaptive_pool(input, c.spatial, c.output, /*max=*/true);
    Dims shape;
    for (int d = 0; d < input.dim() - c.spatial; ++d) shape.push_back(input.size(d));
    for (int d = 0; d < c.spatial; ++d) shape.push_back(c.output[c.output.size() == 1 ? 0 : d]);
    const Tensor avg = c.spatial == 1   ? adaptive_avg_pool1d(input, c.output)
                       : c.spatial == 2 ? adaptive_avg_pool2d(input, c.output)
                                        : adaptive_avg_pool3d(input, c.output);
    const auto [values, indices] = c.spatial == 1   ? adaptive_max_pool1d_with_indices(input, c.output)
                                   : c.spatial == 2 ? adaptive_max_pool2d_with_indices(input, c.output)
                                                    : adaptive_max_pool3d_with_indices(input, c.output);
    CHECK(avg.sizes() == shape);
    CHECK(values.sizes() == shape);
    ember::testing::check_values_close(avg, average.values, 1e-12);
    CHECK(values_of(values) == maximum.values);
    CHECK(indices_of(indices) == maximum.indices);
  }
  // An inf beside a window must not leak into it (masked, never multiplied by 0).
  const Tensor spiky = ember::testing::doubles({1, 2, kInf, 4, 5}, {1, 1, 5});
  ember::testing::check_values_close(adaptive_avg_pool1d(spiky, 3),
                                     ember::testing::reference_adaptive_pool(spiky, 1, {3}, false).values, 1e-12);
  // Output size 0: an empty result of the right shape.
  CHECK(adaptive_avg_pool2d(small_tensor({2, 3, 4, 4}, 3), {0, 2}).sizes() == Dims{2, 3, 0, 2});
  CHECK(adaptive_max_pool1d(small_tensor({3, 4}, 3), 0).sizes() == Dims{3, 0});
}

TEST_CASE("pools take an empty batch and strided inputs") {
  const Tensor empty = zeros({0, 3, 6, 6}, {.dtype = kFloat64});
  CHECK(max_pool2d(empty, 2).sizes() == Dims{0, 3, 3, 3});
  CHECK(avg_pool2d(empty, 3, {.stride = 1}).sizes() == Dims{0, 3, 4, 4});
  CHECK(adaptive_avg_pool2d(empty, 2).sizes() == Dims{0, 3, 2, 2});
  // A transposed (non-contiguous) input pools as its contiguous copy.
  const Tensor base = small_tensor({2, 3, 7, 5}, 8);
  const Tensor strided = base.transpose(2, 3);
  const PoolGeometry geometry{.kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {1}};
  const auto expected = ember::testing::reference_max_pool(strided.contiguous(), 2, geometry);
  const auto [values, indices] = max_pool2d_with_indices(strided, 3, {.stride = 2, .padding = 1});
  CHECK(values_of(values) == expected.values);
  CHECK(indices_of(indices) == expected.indices);
}

}  // namespace test_pooling
