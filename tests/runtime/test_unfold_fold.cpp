// unfold and fold (runtime/functional_unfold.cpp): unfold against a loop reading each window, fold
// as unfold's adjoint (<unfold(x), y> = <x, fold(y)>), gradients, and the errors.
#include <doctest/doctest.h>

#include "conv_reference.h"
#include "error_of.h"

namespace test_unfold_fold {

using namespace ember;
using namespace ember::testing;

namespace {

// unfold's columns by definition: row (c, i, j), column (oh, ow) holds x[c, oh sh - ph + i dh, ow sw - pw + j dw].
std::vector<double> unfold_reference(const Tensor& input, const Dims& kernel, const Dims& dilation, const Dims& padding,
                                     const Dims& stride) {
  const std::vector<double> x = values_of(input);
  const int64_t batch = input.size(0), channels = input.size(1), height = input.size(2), width = input.size(3);
  const int64_t rows = (height + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) / stride[0] + 1;
  const int64_t columns = (width + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) / stride[1] + 1;
  std::vector<double> result;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < kernel[0]; ++i)
        for (int64_t j = 0; j < kernel[1]; ++j)
          for (int64_t oh = 0; oh < rows; ++oh)
            for (int64_t ow = 0; ow < columns; ++ow) {
              const int64_t h = oh * stride[0] - padding[0] + i * dilation[0];
              const int64_t w = ow * stride[1] - padding[1] + j * dilation[1];
              const bool inside = h >= 0 && h < height && w >= 0 && w < width;
              result.push_back(inside ? x[((n * channels + c) * height + h) * width + w] : 0.0);
            }
  return result;
}

}  // namespace

TEST_CASE("unfold: the columns hold each window, over kernels, dilations, paddings and strides") {
  const Tensor input = random_tensor({2, 3, 7, 6}, 80);
  for (const auto& [kernel, dilation, padding, stride] : std::vector<std::tuple<Dims, Dims, Dims, Dims>>{
           {{2, 2}, {1, 1}, {0, 0}, {1, 1}}, {{3, 2}, {2, 1}, {1, 2}, {2, 1}}, {{1, 3}, {1, 2}, {0, 1}, {3, 2}}}) {
    INFO("kernel ", kernel, " dilation ", dilation, " padding ", padding, " stride ", stride);
    const Tensor columns = unfold(input, kernel, {.dilation = dilation, .padding = padding, .stride = stride});
    const std::vector<double> expected = unfold_reference(input, kernel, dilation, padding, stride);
    CHECK(columns.dim() == 3);
    CHECK(columns.size(1) == 3 * kernel[0] * kernel[1]);
    check_close(columns, expected, 0.0);
    check_close(unfold(input.select(0, 1), kernel, {.dilation = dilation, .padding = padding, .stride = stride}),
                values_of(columns.select(0, 1)), 0.0);
  }
}

TEST_CASE("fold: unfold's adjoint, <unfold(x), y> = <x, fold(y)>, and fold(unfold(ones)) counts the windows") {
  const Tensor x = random_tensor({2, 2, 6, 5}, 81);
  const UnfoldOptions options{.dilation = {1, 2}, .padding = 1, .stride = {2, 1}};
  const Tensor columns = unfold(x, {3, 2}, options);
  const Tensor y = random_tensor(columns.sizes(), 82);
  const Tensor folded = fold(y, {6, 5}, {3, 2}, options);
  CHECK(folded.sizes() == x.sizes());
  const double left = mul(columns, y).sum().item<double>(), right = mul(x, folded).sum().item<double>();
  CHECK(left == doctest::Approx(right).epsilon(1e-12));
  // The number of windows covering each position, counted directly.
  const Tensor counts = fold(unfold(ones({1, 1, 6, 5}, {.dtype = kFloat64}), {3, 2}, options), {6, 5}, {3, 2}, options);
  std::vector<double> expected(30, 0.0);
  for (int64_t oh = 0; oh < 3; ++oh)    // (6 + 2 - 2 - 1) / 2 + 1 rows
    for (int64_t ow = 0; ow < 5; ++ow)  // (5 + 2 - 2 - 1) / 1 + 1 columns
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          const int64_t h = oh * 2 - 1 + i, w = ow - 1 + 2 * j;
          if (h >= 0 && h < 6 && w >= 0 && w < 5) expected[h * 5 + w] += 1.0;
        }
  check_close(counts, expected, 0.0);
  check_close(fold(y.select(0, 0), {6, 5}, {3, 2}, options), values_of(folded.select(0, 0)), 0.0);
}

TEST_CASE("unfold and fold: gradients match central differences") {
  const UnfoldOptions options{.dilation = {2, 1}, .padding = {1, 0}, .stride = {1, 2}};
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        return unfold(in[0], {2, 2}, options);
      },
      {random_tensor({1, 2, 5, 5}, 83)});
  const int64_t windows = unfold(random_tensor({1, 2, 5, 5}, 84), {2, 2}, options).size(2);
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        return fold(in[0], {5, 5}, {2, 2}, options);
      },
      {random_tensor({1, 8, windows}, 85)});
}

TEST_CASE("unfold and fold: bad arguments are errors naming the function and the values") {
  CHECK_THROWS_WITH_AS(unfold(random_tensor({2, 3}, 86), 2), doctest::Contains("unfold: expected a 3-D"), Error);
  CHECK_THROWS_WITH_AS(unfold(random_tensor({1, 1, 3, 3}, 87), 4), doctest::Contains("holds no window"), Error);
  CHECK_THROWS_WITH_AS(unfold(random_tensor({1, 1, 3, 3}, 87), {2, 2, 2}),
                       doctest::Contains("kernel_size must have 1 or 2 values"), Error);
  CHECK_THROWS_WITH_AS(fold(random_tensor({1, 4, 8}, 88), {4, 4}, 2),
                       doctest::Contains("calculated number of sliding blocks 3 * 3 = 9, but got 8"), Error);
  CHECK_THROWS_WITH_AS(fold(random_tensor({1, 5, 9}, 89), {4, 4}, 2), doctest::Contains("multiple of the kernel's 4"),
                       Error);
}

}  // namespace test_unfold_fold
