// F::lp_pool1d/2d/3d and nn::LPPool1d/2d/3d against float64 loops of PyTorch's formula
// (avg_pool of x^p times the kernel's element count, to the power 1/p), finite-difference
// gradients (zero where a window sums to zero, as PyTorch documents), refusals and reprs.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "pool_reference.h"
#include "runtime/ember.h"

namespace test_nn_lp_pool {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::PoolGeometry;
using ember::testing::small_tensor;
using ember::testing::values_of;
namespace F = ember::nn::functional;

namespace {

// PyTorch's lp_pool: a = avg_pool(x^p) (padding 0, its divisor the window clipped to the input),
// then (sign(a) relu(|a|) prod(kernel))^(1/p).
std::vector<double> reference_lp_pool(const Tensor& input, int spatial, double p, const PoolGeometry& geometry) {
  const Tensor powered = pow(input, p);
  const std::vector<double> means =
      testing::reference_avg_pool(powered, spatial, geometry, /*count_include_pad=*/true, std::nullopt);
  double kernel_count = 1.0;
  for (int d = 0; d < spatial; ++d)
    kernel_count *= static_cast<double>(geometry.kernel[geometry.kernel.size() == 1 ? 0 : d]);
  std::vector<double> result;
  for (const double mean : means) result.push_back(std::pow(mean * kernel_count, 1.0 / p));  // sign(a) |a| = a
  return result;
}

Tensor lp_pool(int spatial, const Tensor& input, double p, const PoolGeometry& geometry) {
  const F::LPPoolOptions options{.stride = geometry.stride, .ceil_mode = geometry.ceil_mode};
  if (spatial == 1) return F::lp_pool1d(input, p, geometry.kernel, options);
  if (spatial == 2) return F::lp_pool2d(input, p, geometry.kernel, options);
  return F::lp_pool3d(input, p, geometry.kernel, options);
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO(fmt::format("element {}: {} vs {}", i, actual[i], expected[i]));
    CHECK(std::abs(actual[i] - expected[i]) <= 1e-12 * (1.0 + std::abs(expected[i])));
  }
}

}  // namespace

TEST_CASE("lp_pool of full windows is the p-norm of each window") {
  // [1, 1, 2, 4] in 2 x 2 windows: (sum |x|^2)^(1/2) over {1, 2, 5, 6} and {3, 4, 7, 8}.
  const Tensor input = testing::doubles({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4});
  const std::vector<double> norms = values_of(F::lp_pool2d(input, 2.0, 2));
  REQUIRE(norms.size() == 2);
  CHECK(norms[0] == doctest::Approx(std::sqrt(1.0 + 4 + 25 + 36)).epsilon(1e-14));
  CHECK(norms[1] == doctest::Approx(std::sqrt(9.0 + 16 + 49 + 64)).epsilon(1e-14));
  // p = 1 sums the window.
  const std::vector<double> sums = values_of(F::lp_pool1d(testing::doubles({1, 2, 3, 4, 5, 6}, {1, 6}), 1.0, 3));
  CHECK(sums == std::vector<double>{6.0, 15.0});
}

TEST_CASE("lp_pool matches PyTorch's formula in 1-D, 2-D and 3-D with strides and ceil_mode") {
  struct Case {
    int spatial;
    Dims sizes;
    double p;
    PoolGeometry geometry;
  };
  const std::vector<Case> cases = {
      {1, {2, 3, 7}, 2.0, {.kernel = {2}, .stride = {}, .padding = {0}, .dilation = {1}}},
      {1, {3, 5}, 2.0, {.kernel = {2}, .stride = {2}, .padding = {0}, .dilation = {1}, .ceil_mode = true}},
      {2, {2, 2, 5, 6}, 2.0, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {0}, .dilation = {1}}},
      {2, {1, 3, 5, 5}, 4.0, {.kernel = {2}, .stride = {2}, .padding = {0}, .dilation = {1}, .ceil_mode = true}},
      {3, {1, 2, 3, 4, 4}, 2.0, {.kernel = {2}, .stride = {1}, .padding = {0}, .dilation = {1}}},
      {3,
       {2, 3, 5, 4},
       6.0,
       {.kernel = {2, 3, 2}, .stride = {1, 2, 2}, .padding = {0}, .dilation = {1}, .ceil_mode = true}},
  };
  for (const Case& c : cases) {
    INFO(fmt::format("spatial {}, p {}, input {}", c.spatial, c.p, c.sizes));
    const Tensor input = small_tensor(c.sizes, 13);
    const Tensor output = lp_pool(c.spatial, input, c.p, c.geometry);
    CHECK(output.sizes() == testing::pool_layout(c.sizes, c.spatial, c.geometry).output_shape);
    check_close(values_of(output), reference_lp_pool(input, c.spatial, c.p, c.geometry));
  }
  // A partial last window (ceil_mode): its mean of one square times the kernel's 2 elements.
  const Tensor row = testing::doubles({1, 2, 3, 4, 3}, {1, 5});
  const std::vector<double> partial = values_of(F::lp_pool1d(row, 2.0, 2, {.ceil_mode = true}));
  REQUIRE(partial.size() == 3);
  CHECK(partial[2] == doctest::Approx(std::sqrt(2.0 * 9.0)).epsilon(1e-14));
  // Odd p and positive values; a window whose cubes sum below zero is NaN, as PyTorch's pow gives.
  const Tensor positive = testing::doubles({0.5, 2.0, 1.5, 3.0}, {1, 4});
  CHECK(values_of(F::lp_pool1d(positive, 3.0, 2))[1] == doctest::Approx(std::cbrt(1.5 * 1.5 * 1.5 + 27.0)));
  const Tensor negative = testing::doubles({-2.0, 1.0}, {1, 2});
  CHECK(std::isnan(values_of(F::lp_pool1d(negative, 3.0, 2))[0]));
}

TEST_CASE("lp_pool gradients match central differences") {
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        return F::lp_pool2d(in[0], 2.0, {2, 3}, {.stride = {1, 2}});
      },
      {leaf({2, 2, 4, 5}, 31)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::lp_pool1d(in[0], 4.0, 3, {.stride = 2, .ceil_mode = true}); },
            {leaf({2, 8}, 32)});
  // p = 1.5 needs x^p of positive values: |x| >= 0.1 keeps away from abs's kink.
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::lp_pool3d(abs(in[0]), 1.5, 2); },
            {leaf({1, 1, 2, 4, 4}, 33)});
}

TEST_CASE("lp_pool sends zero gradient, not NaN, through a window that sums to zero") {
  const Tensor input = testing::doubles({0.0, 0.0, 1.0, -2.0}, {1, 4}).requires_grad_();
  const Tensor output = F::lp_pool1d(input, 2.0, 2);
  const std::vector<double> values = values_of(output);
  CHECK(values[0] == 0.0);
  CHECK(values[1] == doctest::Approx(std::sqrt(5.0)).epsilon(1e-15));
  output.sum().backward();
  const std::vector<double> grad = values_of(input.grad());
  CHECK(grad[0] == 0.0);
  CHECK(grad[1] == 0.0);
  CHECK(grad[2] == doctest::Approx(1.0 / std::sqrt(5.0)).epsilon(1e-14));  // x / ||x||
  CHECK(grad[3] == doctest::Approx(-2.0 / std::sqrt(5.0)).epsilon(1e-14));
}

TEST_CASE("lp_pool refuses bad arguments, naming the op, the values and the call site") {
  const Tensor input = small_tensor({1, 2, 3, 3}, 4);
  const Tensor small_3d = small_tensor({1, 2, 3, 3}, 4), integers = input.to(kInt64).reshape({2, 9});
  // One call per line: check_messages_name_lines counts them.
  // clang-format off
  const std::vector<std::string> messages = {
      error_of([&] { F::lp_pool2d(input, 0.0, 2); }),
      error_of([&] { F::lp_pool2d(input, 2.0, 4); }),
      error_of([&] { F::lp_pool3d(small_3d, 2.0, {1, 4, 1}, {.ceil_mode = true}); }),
      error_of([&] { F::lp_pool2d(input.reshape({18}), 2.0, 2); }),
      error_of([&] { F::lp_pool1d(integers, 2.0, 2); }),
      error_of([&] { F::lp_pool2d(input, 2.0, 2, {.stride = 0}); }),
      error_of([&] { F::lp_pool1d(input.reshape({2, 9}), 2.0, {2, 2}); }),
  };
  // clang-format on
  const int first_line = __LINE__ - 9;
  testing::check_messages_name_lines(messages,
                                     {"lp_pool2d: norm_type must not be zero",
                                      "lp_pool2d: the kernel_size [4, 4] is larger than the input size [3, 3]",
                                      "lp_pool3d: the kernel_size [1, 4, 1] is larger than the input size [2, 3, 3]",
                                      "lp_pool2d:", "lp_pool1d: the input must be floating point, got int64",
                                      "lp_pool2d: stride must be greater than zero, got [0, 0]",
                                      "lp_pool1d: kernel_size must have 1 or 1 values, got [2, 2]"},
                                     first_line);
}

TEST_CASE("nn::LPPool1d, 2d and 3d call the functions and print as torch.nn's") {
  nn::LPPool2d pool(2, 3, {.stride = 2});
  CHECK(pool->str() == "LPPool2d(norm_type=2, kernel_size=3, stride=2, ceil_mode=False)");
  CHECK(nn::LPPool1d(1.5, 2)->str() == "LPPool1d(norm_type=1.5, kernel_size=2, stride=None, ceil_mode=False)");
  CHECK(nn::LPPool3d(2, {2, 1, 2}, {.stride = {1, 1, 2}, .ceil_mode = true})->str() ==
        "LPPool3d(norm_type=2, kernel_size=(2, 1, 2), stride=(1, 1, 2), ceil_mode=True)");
  const Tensor input = small_tensor({2, 3, 7, 7}, 8);
  CHECK(values_of(pool(input)) == values_of(F::lp_pool2d(input, 2.0, 3, {.stride = 2})));
}

}  // namespace test_nn_lp_pool
