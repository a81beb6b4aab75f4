// F::affine_grid (runtime/nn/functional_grid_sample.h): the grid against theta applied to
// PyTorch's base grid by hand, identity theta through grid_sample reproducing the input, theta's
// gradient by central differences, and the argument errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"
#include "runtime/nn/nn.h"

namespace test_affine_grid {

using namespace ember;
namespace F = ember::nn::functional;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

// linspace_from_neg_one by hand: -1 + 2 i / (S - 1), times (S - 1) / S without align_corners.
double base_coordinate(int64_t i, int64_t steps, bool align) {
  if (steps <= 1) return 0.0;
  const double value = -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(steps - 1);
  return align ? value : value * static_cast<double>(steps - 1) / static_cast<double>(steps);
}

}  // namespace

TEST_CASE("affine_grid 4-D is theta times the base grid") {
  const Tensor theta = small_tensor({2, 2, 3}, 5);
  const std::vector<double> t = values_of(theta);
  for (bool align : {false, true}) {
    const Tensor grid = F::affine_grid(theta, {2, 7, 3, 4}, align);
    REQUIRE(grid.sizes() == Dims{2, 3, 4, 2});
    const std::vector<double> g = values_of(grid);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 4; ++w) {
          const double x = base_coordinate(w, 4, align), y = base_coordinate(h, 3, align);
          for (int64_t r = 0; r < 2; ++r) {
            const double* row = t.data() + (n * 2 + r) * 3;
            CHECK(g[((n * 3 + h) * 4 + w) * 2 + r] == doctest::Approx(row[0] * x + row[1] * y + row[2]).epsilon(1e-14));
          }
        }
  }
}

TEST_CASE("affine_grid 5-D is theta times the base grid, unit axes at 0") {
  const Tensor theta = small_tensor({1, 3, 4}, 6);
  const std::vector<double> t = values_of(theta);
  for (bool align : {false, true}) {
    const Tensor grid = F::affine_grid(theta, {1, 1, 2, 1, 3}, align);
    REQUIRE(grid.sizes() == Dims{1, 2, 1, 3, 3});
    const std::vector<double> g = values_of(grid);
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t w = 0; w < 3; ++w) {
        const double point[4] = {base_coordinate(w, 3, align), 0.0, base_coordinate(d, 2, align), 1.0};
        for (int64_t r = 0; r < 3; ++r) {
          double expected = 0;
          for (int j = 0; j < 4; ++j) expected += t[r * 4 + j] * point[j];
          CHECK(g[(d * 3 + w) * 3 + r] == doctest::Approx(expected).epsilon(1e-14));
        }
      }
  }
}

TEST_CASE("identity theta through affine_grid and grid_sample reproduces the input") {
  using F::GridSampleMode;
  const Tensor input = small_tensor({2, 3, 4, 5}, 7);
  const Tensor identity = from_vector<double>({1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}, {2, 2, 3}, {.dtype = kFloat64});
  for (bool align : {false, true})
    for (GridSampleMode mode : {GridSampleMode::Bilinear, GridSampleMode::Nearest, GridSampleMode::Bicubic}) {
      INFO(std::string(std::string(F::grid_sample_mode_name(mode)) + (align ? " align_corners" : "")));
      const Tensor grid = F::affine_grid(identity, {2, 3, 4, 5}, align);
      const Tensor out = F::grid_sample(input, grid, {.mode = mode, .align_corners = align});
      CHECK(allclose(out, input, 1e-12, 1e-12));
    }
  // 5-D, trilinear.
  const Tensor volume = small_tensor({1, 2, 3, 4, 2}, 8);
  const Tensor identity3 = from_vector<double>({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, {1, 3, 4}, {.dtype = kFloat64});
  for (bool align : {false, true}) {
    const Tensor out =
        F::grid_sample(volume, F::affine_grid(identity3, {1, 2, 3, 4, 2}, align), {.align_corners = align});
    CHECK(allclose(out, volume, 1e-12, 1e-12));
  }
}

TEST_CASE("affine_grid gradient w.r.t. theta by central differences") {
  const Tensor theta = small_tensor({2, 2, 3}, 9).requires_grad_();
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::affine_grid(in[0], {2, 1, 3, 2}, false); }, {theta});
  const Tensor theta3 = small_tensor({1, 3, 4}, 10).requires_grad_();
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::affine_grid(in[0], {1, 1, 2, 2, 3}, true); },
                   {theta3});
  // Through grid_sample too: the rotation/scale of a sampled image, w.r.t. theta and the image.
  const Tensor image = small_tensor({2, 1, 3, 4}, 11).requires_grad_();
  const Tensor small_theta = small_tensor({2, 2, 3}, 12).mul(0.5).detach().requires_grad_();
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        return F::grid_sample(in[0], F::affine_grid(in[1], {2, 1, 3, 3}, false), {});
      },
      {image, small_theta}, 1e-5);
}

TEST_CASE("affine_grid refuses bad theta and sizes") {
  const Tensor theta = small_tensor({2, 2, 3}, 13);
  const Tensor theta3 = small_tensor({2, 3, 4}, 14);
  const Tensor integers = zeros({2, 2, 3}, {.dtype = kInt64});
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages = {
      error_of([&] { F::affine_grid(theta3, {2, 1, 4, 4}); }),
      error_of([&] { F::affine_grid(theta, {2, 1, 3, 4, 4}); }),
      error_of([&] { F::affine_grid(theta, {2, 4, 4}); }),
      error_of([&] { F::affine_grid(integers, {2, 1, 4, 4}); }),
      error_of([&] { F::affine_grid(theta, {2, 1, 0, 4}); }),
      error_of([&] { F::affine_grid(theta, {3, 1, 4, 4}); }),
  };
  check_messages_name_lines(
      messages,
      {"affine_grid: Expected a batch of 2D affine matrices of shape Nx2x3 for size [2, 1, 4, 4]. Got [2, 3, 4].",
       "affine_grid: Expected a batch of 3D affine matrices of shape Nx3x4 for size [2, 1, 3, 4, 4]",
       "affine_grid: only supports 4D and 5D sizes", "affine_grid: Expected theta to have floating point type",
       "affine_grid: Expected non-zero, positive output size. Got [2, 1, 0, 4]",
       "affine_grid: theta holds 2 affine matrices (shape [2, 2, 3]) but size asks for a batch of 3"},
      first);
  // A unit-size axis with align_corners is only warned about by PyTorch: allowed.
  CHECK(F::affine_grid(theta, {2, 1, 1, 4}, true).sizes() == Dims{2, 1, 4, 2});
}

}  // namespace test_affine_grid
