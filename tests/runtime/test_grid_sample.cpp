// F::grid_sample (runtime/nn/functional_grid_sample.h) against the float64 reference of
// grid_sample_reference.h in every mode, padding mode and align_corners, with grid points inside
// and outside [-1, 1]; hand-computed values for nearest's rounding and the padding rules; float32
// and 16-bit inputs against the float64 result.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "finite_difference.h"
#include "grid_sample_reference.h"
#include "runtime/ember.h"
#include "runtime/nn/nn.h"

namespace test_grid_sample {

using namespace ember;
namespace F = ember::nn::functional;
using ember::testing::GridMode;
using ember::testing::GridPadding;
using ember::testing::small_values;
using ember::testing::values_of;

namespace {

// Random input values and grid values spread over [-1.6, 1.6], plus the exact edges -1, 0, 1 and
// two points far outside (8 and -5) in every grid.
ember::testing::GridSampleCase make_case(const std::vector<int64_t>& input_sizes,
                                         const std::vector<int64_t>& grid_sizes, uint32_t seed) {
  ember::testing::GridSampleCase c{.input_sizes = input_sizes, .grid_sizes = grid_sizes};
  int64_t input_count = 1, grid_count = 1;
  for (int64_t s : input_sizes) input_count *= s;
  for (int64_t s : grid_sizes) grid_count *= s;
  c.input = small_values(input_count, seed);
  c.grid = small_values(grid_count, seed + 1);
  for (double& g : c.grid) g *= 1.6;
  const double specials[] = {-1.0, 0.0, 1.0, 8.0, -5.0};
  for (size_t i = 0; i < 5 && 3 * i < c.grid.size(); ++i) c.grid[3 * i] = specials[i];
  return c;
}

Tensor tensor_of(const std::vector<double>& values, const std::vector<int64_t>& sizes, DType dtype = kFloat64) {
  return from_vector<double>(values, Dims(sizes), {.dtype = dtype});
}

std::string describe(GridMode mode, GridPadding padding, bool align) {
  return std::string(F::grid_sample_mode_name(mode)) + " " + std::string(F::grid_sample_padding_name(padding)) +
         (align ? " align_corners" : "");
}

void check_against_reference(const ember::testing::GridSampleCase& c, GridMode mode, GridPadding padding, bool align) {
  INFO(describe(mode, padding, align));
  const Tensor out = F::grid_sample(tensor_of(c.input, c.input_sizes), tensor_of(c.grid, c.grid_sizes),
                                    {.mode = mode, .padding_mode = padding, .align_corners = align});
  std::vector<int64_t> expected_sizes = {c.input_sizes[0], c.input_sizes[1]};
  for (size_t a = 1; a + 1 < c.grid_sizes.size(); ++a) expected_sizes.push_back(c.grid_sizes[a]);
  CHECK(out.sizes() == Dims(expected_sizes));
  CHECK(out.dtype() == kFloat64);
  const std::vector<double> expected = ember::testing::reference_grid_sample(c, mode, padding, align);
  const std::vector<double> actual = values_of(out);
  REQUIRE(actual.size() == expected.size());
  bool nonzero = false;
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO(std::string("element " + std::to_string(i)));
    CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-12).scale(1.0));
    nonzero = nonzero || expected[i] != 0.0;
  }
  CHECK(nonzero);  // never a pass on all zeros
}

const GridPadding kPaddings[] = {GridPadding::Zeros, GridPadding::Border, GridPadding::Reflection};

}  // namespace

TEST_CASE("grid_sample 4-D matches the float64 reference in every mode, padding and align_corners") {
  const auto c = make_case({2, 3, 4, 5}, {2, 3, 7, 2}, 11);
  for (GridMode mode : {GridMode::Bilinear, GridMode::Nearest, GridMode::Bicubic})
    for (GridPadding padding : kPaddings)
      for (bool align : {false, true}) check_against_reference(c, mode, padding, align);
}

TEST_CASE("grid_sample 5-D bilinear and nearest match the float64 reference") {
  const auto c = make_case({2, 2, 3, 4, 5}, {2, 2, 3, 4, 3}, 21);
  for (GridMode mode : {GridMode::Bilinear, GridMode::Nearest})
    for (GridPadding padding : kPaddings)
      for (bool align : {false, true}) check_against_reference(c, mode, padding, align);
}

TEST_CASE("grid_sample with one-pixel axes matches the reference") {
  // Size 1 makes the reflection span 0 with align_corners, and (S - 1) = 0 when unnormalizing.
  const auto c = make_case({1, 2, 1, 3}, {1, 4, 3, 2}, 31);
  for (GridMode mode : {GridMode::Bilinear, GridMode::Nearest, GridMode::Bicubic})
    for (GridPadding padding : kPaddings)
      for (bool align : {false, true}) check_against_reference(c, mode, padding, align);
}

TEST_CASE("grid_sample nearest rounds halves to even, as nearbyint") {
  // W = 4 without align_corners: x = ((g + 1) 4 - 1) / 2, so g = -0.5, 0, 0.5 land on 0.5, 1.5, 2.5.
  const Tensor input = tensor_of({10, 20, 30, 40}, {1, 1, 1, 4});
  const Tensor grid = tensor_of({-0.5, 0, 0, 0, 0.5, 0}, {1, 1, 3, 2});
  const Tensor out = F::grid_sample(input, grid, {.mode = GridMode::Nearest});
  CHECK(values_of(out) == std::vector<double>{10, 30, 30});
}

TEST_CASE("grid_sample padding modes by hand") {
  // W = 3, H = 1, align_corners = false: g = 1.5 unnormalizes to x = 3.25, past the edge at 2.5.
  const Tensor input = tensor_of({1, 2, 4}, {1, 1, 1, 3});
  const Tensor grid = tensor_of({1.5, 0}, {1, 1, 1, 2});
  auto sample = [&](GridPadding padding) {
    return values_of(F::grid_sample(input, grid, {.padding_mode = padding}))[0];
  };
  CHECK(sample(GridPadding::Zeros) == 0.0);   // corners 3 and 4 are both outside
  CHECK(sample(GridPadding::Border) == 4.0);  // clamped to x = 2
  // Reflected about 2.5: x = 1.75, between 2 (weight 0.25) and 4 (weight 0.75).
  CHECK(sample(GridPadding::Reflection) == doctest::Approx(0.25 * 2 + 0.75 * 4));
  // With align_corners g = 1.5 is x = 2.5, reflected about 2 to 1.5: halfway between 2 and 4.
  CHECK(values_of(F::grid_sample(input, grid, {.padding_mode = GridPadding::Reflection, .align_corners = true}))[0] ==
        doctest::Approx(3.0));
}

TEST_CASE("grid_sample non-finite grid points: NaN samples zeros, +inf is clamped by border") {
  // After padding, a non-finite coordinate becomes -100, outside the input
  // (safe_downgrade_to_int_range); PyTorch's own CPU and CUDA kernels disagree about NaN under border
  // and reflection, ember takes this rule. Border clamps +inf to the last column first (x = 1;
  // y = 0.5 lies between the rows): bilinear gives (2 + 4) / 2, nearest rounds y = 0.5 to row 0.
  const Tensor input = tensor_of({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor grid = tensor_of({NAN, 0, INFINITY, 0}, {1, 1, 2, 2});
  for (GridPadding padding : kPaddings) {
    INFO(std::string(F::grid_sample_padding_name(padding)));
    const bool border = padding == GridPadding::Border;
    CHECK(values_of(F::grid_sample(input, grid, {.padding_mode = padding})) ==
          std::vector<double>{0, border ? 3.0 : 0.0});
    CHECK(values_of(F::grid_sample(input, grid, {.mode = GridMode::Nearest, .padding_mode = padding})) ==
          std::vector<double>{0, border ? 2.0 : 0.0});
  }
}

TEST_CASE("grid_sample float32 and bfloat16 follow the float64 result") {
  const auto c = make_case({1, 2, 4, 4}, {1, 3, 3, 2}, 41);
  for (GridMode mode : {GridMode::Bilinear, GridMode::Bicubic}) {
    const F::GridSampleFuncOptions options{.mode = mode, .padding_mode = GridPadding::Reflection};
    const std::vector<double> exact =
        values_of(F::grid_sample(tensor_of(c.input, c.input_sizes), tensor_of(c.grid, c.grid_sizes), options));
    for (auto [dtype, tolerance] : {std::pair{kFloat32, 1e-5}, std::pair{kBFloat16, 4e-2}}) {
      const Tensor out =
          F::grid_sample(tensor_of(c.input, c.input_sizes, dtype), tensor_of(c.grid, c.grid_sizes, dtype), options);
      CHECK(out.dtype() == dtype);
      const std::vector<double> rounded = values_of(out);
      // bf16 rounds the grid too, which moves the sample: compare loosely.
      for (size_t i = 0; i < exact.size(); ++i) CHECK(std::abs(rounded[i] - exact[i]) <= tolerance);
    }
  }
}

}  // namespace test_grid_sample
