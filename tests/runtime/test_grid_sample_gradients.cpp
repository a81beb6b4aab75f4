// F::grid_sample's gradients by central differences, w.r.t. the input and the grid, in every mode,
// padding mode and align_corners; the grid points keep a distance from pixel centres, edges and
// reflection axes, where the derivative jumps. Then the argument errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"
#include "runtime/nn/nn.h"

namespace test_grid_sample_gradients {

using namespace ember;
namespace F = ember::nn::functional;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::small_tensor;
using ember::testing::values_of;
using F::GridSampleMode;
using F::GridSamplePadding;

namespace {

// A grid leaf [N, Ho, Wo, k] whose unnormalized coordinates are an integer from -3 to S + 1 plus a
// fraction in [0.2, 0.4] or [0.6, 0.8]: away from integers (pixel centres, clamp bounds, reflection
// axes with align_corners) and from halves (reflection axes without it, nearest's rounding jumps).
Tensor grid_away_from_kinks(const Dims& grid_sizes, const std::vector<int64_t>& spatial, bool align, uint32_t seed) {
  const int axes = static_cast<int>(spatial.size());
  std::vector<double> values = ember::testing::small_values(grid_sizes.product(), seed);
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t size = spatial[axes - 1 - static_cast<int>(i % axes)];  // component j is axis k - 1 - j
    const double unit = (values[i] + 1.0) / 2.0;                          // [0, 0.45] u [0.55, 1]
    const int64_t whole = static_cast<int64_t>(unit * 1e6) % (size + 5) - 3;
    const double fraction = values[i] < 0 ? 0.2 + 0.2 * (unit / 0.45) : 0.6 + 0.2 * ((unit - 0.55) / 0.45);
    const double position = static_cast<double>(whole) + fraction;
    values[i] = align ? position * 2.0 / static_cast<double>(size - 1) - 1.0
                      : (2.0 * position + 1.0) / static_cast<double>(size) - 1.0;
  }
  return from_vector<double>(values, grid_sizes, {.dtype = kFloat64}).requires_grad_();
}

}  // namespace

TEST_CASE("grid_sample 4-D gradients w.r.t. input and grid by central differences") {
  for (GridSampleMode mode : {GridSampleMode::Bilinear, GridSampleMode::Bicubic})
    for (GridSamplePadding padding :
         {GridSamplePadding::Zeros, GridSamplePadding::Border, GridSamplePadding::Reflection})
      for (bool align : {false, true}) {
        INFO(std::string(std::string(F::grid_sample_mode_name(mode)) + " " +
                         std::string(F::grid_sample_padding_name(padding)) + (align ? " align_corners" : "")));
        const Tensor input = small_tensor({2, 2, 3, 4}, 51).requires_grad_();
        const Tensor grid = grid_away_from_kinks({2, 3, 2, 2}, {3, 4}, align, 52);
        const F::GridSampleFuncOptions options{.mode = mode, .padding_mode = padding, .align_corners = align};
        gradcheck_leaves([&](const std::vector<Tensor>& in) { return F::grid_sample(in[0], in[1], options); },
                         {input, grid},
                  1e-5);
        CHECK(values_of(grid.grad().abs().sum())[0] > 0.0);  // the grid's gradient is not trivially 0
      }
}

TEST_CASE("grid_sample 5-D trilinear gradients by central differences") {
  for (GridSamplePadding padding : {GridSamplePadding::Zeros, GridSamplePadding::Reflection})
    for (bool align : {false, true}) {
      const Tensor input = small_tensor({1, 2, 2, 3, 3}, 61).requires_grad_();
      const Tensor grid = grid_away_from_kinks({1, 2, 2, 2, 3}, {2, 3, 3}, align, 62);
      const F::GridSampleFuncOptions options{.padding_mode = padding, .align_corners = align};
      gradcheck_leaves([&](const std::vector<Tensor>& in) { return F::grid_sample(in[0], in[1], options); },
                       {input, grid},
                1e-5);
    }
}

TEST_CASE("grid_sample nearest: the input's gradient by central differences, the grid's is 0") {
  for (bool align : {false, true}) {
    const Tensor input = small_tensor({1, 2, 3, 4}, 71).requires_grad_();
    const Tensor grid = grid_away_from_kinks({1, 4, 3, 2}, {3, 4}, align, 72);
    const F::GridSampleFuncOptions options{.mode = GridSampleMode::Nearest, .align_corners = align};
    gradcheck_leaves([&](const std::vector<Tensor>& in) { return F::grid_sample(in[0], in[1], options); },
                     {input, grid});
    REQUIRE(grid.grad().defined());
    CHECK(values_of(grid.grad().abs().sum())[0] == 0.0);
  }
}

TEST_CASE("grid_sample bilinear grid gradient by hand") {
  // One row [1, 3, 7] (W = 3, align_corners): x = g + 1, so d out / d g_x is the slope of the cell.
  const Tensor input = from_vector<double>({1, 3, 7}, {1, 1, 1, 3}, {.dtype = kFloat64});
  const Tensor grid = from_vector<double>({-0.5, 0, 0.25, 0}, {1, 1, 2, 2}, {.dtype = kFloat64}).requires_grad_();
  F::grid_sample(input, grid, {.align_corners = true}).sum().backward();
  CHECK(values_of(grid.grad()) == std::vector<double>{2, 0, 4, 0});
}

TEST_CASE("grid_sample refuses bad input and grid") {
  const Tensor input = small_tensor({2, 3, 4, 4}, 81);
  const Tensor grid = small_tensor({2, 5, 5, 2}, 82);
  const Tensor grid3 = small_tensor({2, 5, 5, 3}, 83);
  const Tensor other_batch = small_tensor({3, 5, 5, 2}, 84);
  const Tensor volume = small_tensor({2, 3, 4, 4, 4}, 85);
  const Tensor volume_grid = small_tensor({2, 2, 2, 2, 3}, 86);
  const Tensor empty_spatial = zeros({2, 3, 0, 4}, {.dtype = kFloat64});
  const Tensor float_grid = grid.to(kFloat32);
  const Tensor integer_input = zeros({2, 3, 4, 4}, {.dtype = kInt64});
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages = {
      error_of([&] { F::grid_sample(input, grid3); }),
      error_of([&] { F::grid_sample(input, other_batch); }),
      error_of([&] { F::grid_sample(input, volume_grid); }),
      error_of([&] { F::grid_sample(volume, volume_grid, {.mode = GridSampleMode::Bicubic}); }),
      error_of([&] { F::grid_sample(empty_spatial, grid); }),
      error_of([&] { F::grid_sample(input, float_grid); }),
      error_of([&] { F::grid_sample(integer_input, grid); }),
      error_of([&] { F::grid_sample(input.select(0, 0), grid.select(0, 0)); }),
  };
  check_messages_name_lines(
      messages,
      {"grid_sample: expected grid to have size 2 in last dimension, but got grid with sizes [2, 5, 5, 3]",
       "grid_sample: expected grid and input to have same batch size, but got input with sizes [2, 3, 4, 4] and grid "
       "with sizes [3, 5, 5, 2]",
       "grid_sample: expected 4D or 5D input and grid with same number of dimensions",
       "grid_sample: bicubic interpolation only supports 4D input",
       "grid_sample: expected input to have non-empty spatial dimensions, but input has sizes [2, 3, 0, 4] with "
       "dimension 2 being empty",
       "grid_sample: expected input and grid to have the same floating dtype, but input has float64 and grid has "
       "float32",
       "grid_sample: expected input and grid to have the same floating dtype, but input has int64",
       "grid_sample: expected 4D or 5D input and grid with same number of dimensions, but got input with sizes [3, 4, "
       "4]"},
      first);
}

}  // namespace test_grid_sample_gradients
