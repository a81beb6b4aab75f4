// conv_transpose1d/2d/3d (runtime/functional_conv_transpose.cpp) against conv_reference.h's float64
// scatter of every input element into its output window; the adjoint identity with conv (the
// transposed convolution is conv's input gradient); gradients; output_padding; and the errors.
#include <doctest/doctest.h>

#include "conv_reference.h"
#include "error_of.h"

namespace test_conv_transpose {

using namespace ember;
using namespace ember::testing;

namespace {

Tensor transpose_convolve(const Tensor& input, const Tensor& weight, const Tensor& bias,
                          const ConvTransposeOptions& options) {
  switch (weight.dim() - 2) {
    case 1:
      return conv_transpose1d(input, weight, bias, options);
    case 2:
      return conv_transpose2d(input, weight, bias, options);
    default:
      return conv_transpose3d(input, weight, bias, options);
  }
}

struct Case {
  Dims input, weight;
  ConvGeometry geometry;
  bool bias = true;
};

ConvTransposeOptions options_of(const ConvGeometry& g) {
  const int spatial = static_cast<int>(g.stride.size());
  return {.stride = Dims(g.stride),
          .padding = Dims(g.padding),
          .output_padding = g.output_padding.empty() ? Dims::filled(spatial, 0) : Dims(g.output_padding),
          .groups = g.groups,
          .dilation = Dims(g.dilation)};
}

}  // namespace

TEST_CASE("conv_transpose: 1-D, 2-D and 3-D equal the float64 scatter over strides, paddings, dilations, groups") {
  const std::vector<Case> cases = {
      {{2, 3, 5}, {3, 4, 3}, {{1}, {0}, {1}}},
      {{2, 4, 6}, {4, 3, 4}, {{2}, {1}, {2}, {1}, 2}},
      {{1, 2, 4}, {2, 2, 1}, {{3}, {0}, {1}, {2}}, false},
      {{2, 3, 4, 5}, {3, 2, 3, 2}, {{2, 1}, {1, 0}, {1, 2}, {1, 0}}},
      {{1, 4, 5, 3}, {4, 1, 3, 3}, {{1, 2}, {2, 1}, {2, 1}, {0, 1}, 4}},
      {{1, 2, 3, 4, 2}, {2, 2, 2, 3, 2}, {{2, 1, 2}, {0, 1, 1}, {1, 1, 2}, {1, 0, 0}}},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    INFO("input ", c.input, " weight ", c.weight, " groups ", c.geometry.groups);
    const Tensor input = random_tensor(c.input, seed++), weight = random_tensor(c.weight, seed++);
    const Tensor bias = c.bias ? random_tensor({c.weight[1] * c.geometry.groups}, seed++) : Tensor();
    std::vector<int64_t> shape;
    const std::vector<double> expected = conv_transpose_reference(input, weight, bias, c.geometry, shape);
    const Tensor result = transpose_convolve(input, weight, bias, options_of(c.geometry));
    CHECK(result.sizes() == Dims(shape));
    CHECK(result.is_contiguous());
    check_close(result, expected, 1e-12);
    const Tensor single = transpose_convolve(input.select(0, 0), weight, bias, options_of(c.geometry));
    CHECK(single.dim() == result.dim() - 1);
    check_close(single, values_of(result.select(0, 0)), 1e-12);
  }
}

TEST_CASE("conv_transpose: the adjoint of conv with the same weight, <conv(x), y> = <x, conv_transpose(y)>") {
  // With output_padding chosen so conv_transpose's output has x's size, the two are adjoint maps.
  const Tensor x = random_tensor({2, 4, 9, 8}, 110), weight = random_tensor({6, 2, 3, 2}, 111);
  const ConvOptions forward{.stride = 2, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2};
  const Tensor convolved = conv2d(x, weight, {}, forward);
  const Tensor y = random_tensor(convolved.sizes(), 112);
  // conv: (9 + 2 - 2 - 1) / 2 + 1 = 5 rows, (8 - 2 - 1) / 2 + 1 = 3 columns; back: 4 * 2 - 2 + 2 + 1 = 9
  // rows (output_padding 0) and 2 * 2 + 2 + 1 = 7 columns, so output_padding 1 gives 8.
  const Tensor back = conv_transpose2d(
      y, weight, {}, {.stride = 2, .padding = {1, 0}, .output_padding = {0, 1}, .groups = 2, .dilation = {1, 2}});
  CHECK(back.sizes() == x.sizes());
  CHECK(mul(convolved, y).sum().item<double>() == doctest::Approx(mul(x, back).sum().item<double>()).epsilon(1e-12));
}

TEST_CASE("conv_transpose: gradients of input, weight and bias match central differences") {
  gradcheck(
      [](const std::vector<Tensor>& in) {
        return conv_transpose2d(
            in[0], in[1], in[2],
            {.stride = {2, 1}, .padding = 1, .output_padding = {1, 0}, .groups = 2, .dilation = {1, 2}});
      },
      {random_tensor({1, 4, 3, 3}, 120), random_tensor({4, 1, 2, 3}, 121), random_tensor({2}, 122)});
  gradcheck([](const std::vector<Tensor>& in) { return conv_transpose1d(in[0], in[1], in[2], {.stride = 3}); },
            {random_tensor({2, 2, 3}, 123), random_tensor({2, 3, 2}, 124), random_tensor({3}, 125)});
}

TEST_CASE("conv_transpose: bad arguments are errors naming the function and the values") {
  const Tensor input = random_tensor({1, 4, 5, 5}, 130), weight = random_tensor({4, 2, 3, 3}, 131);
  CHECK_THROWS_WITH_AS(conv_transpose2d(input, random_tensor({3, 2, 3, 3}, 132)),
                       doctest::Contains("to have 3 channels"), Error);
  CHECK_THROWS_WITH_AS(conv_transpose2d(input, weight, {}, {.output_padding = 1}),
                       doctest::Contains("output padding must be smaller than either stride or dilation"), Error);
  CHECK_THROWS_WITH_AS(conv_transpose2d(input, weight, {}, {.padding = 4}), doctest::Contains("is too small"), Error);
  CHECK_THROWS_WITH_AS(conv_transpose2d(input, weight, {}, {.groups = 3}), doctest::Contains("divisible by groups"),
                       Error);
  CHECK_THROWS_WITH_AS(conv_transpose2d(input, weight, random_tensor({4}, 133)),
                       doctest::Contains("bias of 2 elements"), Error);
  CHECK_THROWS_WITH_AS(conv_transpose1d(input, weight), doctest::Contains("expected a 3-D weight"), Error);
}

}  // namespace test_conv_transpose
