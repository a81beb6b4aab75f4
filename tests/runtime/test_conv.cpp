// conv1d/2d/3d (runtime/functional_conv.cpp) against conv_reference.h's float64 window sums:
// strides, paddings (amounts, "same", "valid"), dilations, groups, bias, unbatched inputs; first
// and second derivatives by central differences; float32 and autocast; and the errors.
#include <doctest/doctest.h>

#include "conv_reference.h"
#include "error_of.h"
#include "runtime/autograd/grad.h"

namespace test_conv {

using namespace ember;
using namespace ember::testing;

namespace {

Tensor convolve(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvOptions& options) {
  switch (weight.dim() - 2) {
    case 1:
      return conv1d(input, weight, bias, options);
    case 2:
      return conv2d(input, weight, bias, options);
    default:
      return conv3d(input, weight, bias, options);
  }
}

struct Case {
  Dims input, weight;
  ConvGeometry geometry;
  bool bias = true;
};

ConvOptions options_of(const ConvGeometry& g) {
  return {.stride = Dims(g.stride), .padding = Dims(g.padding), .dilation = Dims(g.dilation), .groups = g.groups};
}

}  // namespace

TEST_CASE("conv: 1-D, 2-D and 3-D convolutions equal float64 window sums over strides, paddings, dilations, groups") {
  const std::vector<Case> cases = {
      {{2, 3, 9}, {4, 3, 3}, {{1}, {0}, {1}}},
      {{2, 4, 11}, {6, 2, 4}, {{2}, {3}, {2}, {}, 2}},
      {{1, 2, 7}, {2, 2, 1}, {{3}, {1}, {1}}, false},
      {{2, 3, 7, 6}, {5, 3, 3, 2}, {{1, 1}, {1, 0}, {1, 1}}},
      {{2, 4, 8, 9}, {4, 1, 3, 3}, {{2, 1}, {1, 2}, {2, 1}, {}, 4}},  // depthwise
      {{1, 6, 6, 5}, {6, 2, 2, 3}, {{2, 2}, {0, 1}, {1, 2}, {}, 3}, false},
      {{1, 2, 5, 4, 6}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {1, 0, 1}, {1, 1, 2}}},
      {{2, 4, 4, 5, 3}, {2, 2, 3, 1, 2}, {{2, 1, 1}, {0, 1, 1}, {1, 2, 1}, {}, 2}},
  };
  uint32_t seed = 10;
  for (const Case& c : cases) {
    INFO("input ", c.input, " weight ", c.weight, " groups ", c.geometry.groups);
    const Tensor input = random_tensor(c.input, seed++), weight = random_tensor(c.weight, seed++);
    const Tensor bias = c.bias ? random_tensor({c.weight[0]}, seed++) : Tensor();
    std::vector<int64_t> shape;
    const std::vector<double> expected = conv_reference(input, weight, bias, c.geometry, shape);
    const Tensor result = convolve(input, weight, bias, options_of(c.geometry));
    CHECK(result.sizes() == Dims(shape));
    CHECK(result.dtype() == kFloat64);
    check_close(result, expected, 1e-12);
    // Unbatched: the first sample alone, without its batch dim.
    const Tensor single = convolve(input.select(0, 0), weight, bias, options_of(c.geometry));
    CHECK(single.dim() == result.dim() - 1);
    check_close(single, values_of(result.select(0, 0)), 1e-12);
  }
}

TEST_CASE("conv: padding \"same\" keeps the size with the odd element after, \"valid\" pads nothing") {
  const Tensor input = random_tensor({2, 3, 7, 10}, 31);
  for (const Dims& kernel : {Dims{3, 3}, Dims{4, 2}, Dims{1, 5}}) {
    for (const int64_t dilation : {1, 2}) {
      INFO("kernel ", kernel, " dilation ", dilation);
      const Tensor weight = random_tensor({2, 3, kernel[0], kernel[1]}, 32);
      const Tensor same = conv2d(input, weight, {}, {.padding = "same", .dilation = dilation});
      CHECK(same.sizes() == Dims{2, 2, 7, 10});
      // PyTorch's rule: total = dilation (k - 1), before = total / 2, the rest after. An explicit
      // pad followed by a valid conv is the reference.
      std::vector<int64_t> pads;
      for (int d = 1; d >= 0; --d) {
        const int64_t total = dilation * (kernel[d] - 1);
        pads.push_back(total / 2);
        pads.push_back(total - total / 2);
      }
      const Tensor reference = conv2d(ember::pad(input, pads), weight, {}, {.padding = "valid", .dilation = dilation});
      check_close(same, values_of(reference), 1e-12);
      std::vector<int64_t> shape;
      const ConvGeometry valid{{1, 1}, {0, 0}, {dilation, dilation}};
      check_close(conv2d(input, weight, {}, {.padding = "valid", .dilation = dilation}),
                  conv_reference(input, weight, {}, valid, shape), 1e-12);
    }
  }
}

TEST_CASE("conv: gradients of input, weight and bias match central differences, grouped and strided") {
  const std::vector<Case> cases = {
      {{2, 2, 6}, {3, 2, 3}, {{2}, {1}, {1}}},
      {{1, 4, 5, 4}, {4, 2, 2, 3}, {{1, 2}, {1, 1}, {2, 1}, {}, 2}},
      {{1, 2, 3, 4, 3}, {2, 1, 2, 2, 2}, {{1, 1, 2}, {0, 1, 1}, {1, 1, 1}, {}, 2}},
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    INFO("input ", c.input, " weight ", c.weight);
    const ConvOptions options = options_of(c.geometry);
    gradcheck(
        [&](const std::vector<Tensor>& in) { return convolve(in[0], in[1], in[2], options); },
        {random_tensor(c.input, seed), random_tensor(c.weight, seed + 1), random_tensor({c.weight[0]}, seed + 2)});
    seed += 3;
  }
}

TEST_CASE("conv: the gradient is itself differentiable (second derivatives by central differences)") {
  const ConvOptions options{.stride = 2, .padding = 1, .groups = 2};
  // f(x, w) = d/dx sum(conv(x, w) * p), a function of both: its derivatives are the second ones.
  const Tensor projection = random_tensor({1, 2, 3, 2}, 52);
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        // gradcheck's differences run without gradients: x is made a leaf here so grad() has a graph.
        AutoGradMode enabled(true);
        const Tensor x = in[0].requires_grad() ? in[0] : in[0].detach().requires_grad_();
        const Tensor out = conv2d(x, in[1], {}, options);
        return autograd::grad({mul(out, projection).sum()}, {x}, {}, true, true)[0];
      },
      {random_tensor({1, 4, 5, 4}, 50), random_tensor({2, 2, 3, 3}, 51)});
}

TEST_CASE("conv: float32 agrees with float64, and autocast computes in bfloat16 from float32 parameters") {
  const Tensor input = random_tensor({2, 3, 6, 6}, 60), weight = random_tensor({4, 3, 3, 3}, 61);
  const Tensor bias = random_tensor({4}, 62);
  const Tensor exact = conv2d(input, weight, bias, {.padding = 1});
  const Tensor single = conv2d(input.to(kFloat32), weight.to(kFloat32), bias.to(kFloat32), {.padding = 1});
  CHECK(single.dtype() == kFloat32);
  check_close(single, values_of(exact), 1e-5);
  {
    AutocastGuard autocast(kBFloat16);
    const Tensor lowered = conv2d(input.to(kFloat32), weight.to(kFloat32), bias.to(kFloat32), {.padding = 1});
    CHECK(lowered.dtype() == kBFloat16);
    check_close(lowered, values_of(exact), 0.05);
    // float64 stays float64 under autocast, as PyTorch's autocast leaves it alone.
    CHECK(conv2d(input, weight, bias, {.padding = 1}).dtype() == kFloat64);
  }
}

TEST_CASE("conv: bad arguments are errors that name the function, the values and the call site") {
  const Tensor input = random_tensor({1, 4, 6, 6}, 70), weight = random_tensor({2, 4, 3, 3}, 71);
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { conv2d(input, random_tensor({2, 3, 3, 3}, 72)); });
  CHECK(message.find("conv2d") != std::string::npos);
  CHECK(message.find("3 channels") != std::string::npos);
  CHECK(message.find("got 4") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK_THROWS_WITH_AS(conv2d(random_tensor({4, 6}, 73), weight),
                       doctest::Contains("expected a 3-D (unbatched) or 4-D"), Error);
  CHECK_THROWS_WITH_AS(conv2d(input, random_tensor({2, 4, 7, 3}, 74)),
                       doctest::Contains("can't be greater than the actual input size"), Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight, {}, {.stride = 2, .padding = "same"}),
                       doctest::Contains("padding='same' is not supported for strided convolutions"), Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight, {}, {.padding = "full"}),
                       doctest::Contains("\"valid\" or \"same\", got \"full\""), Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight.to(kFloat32)), doctest::Contains("should be the same"), Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight, random_tensor({3}, 75)), doctest::Contains("bias of 2 elements"), Error);
  CHECK_THROWS_WITH_AS(conv2d(input, random_tensor({3, 2, 3, 3}, 76), {}, {.groups = 2}),
                       doctest::Contains("3 output channels (shape [3, 2, 3, 3]) must be divisible by groups=2"),
                       Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight, {}, {.groups = 0}), doctest::Contains("groups must be positive"), Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight, {}, {.stride = {1, 0}}), doctest::Contains("stride must be positive"),
                       Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight, {}, {.padding = -1}), doctest::Contains("padding must be non-negative"),
                       Error);
  CHECK_THROWS_WITH_AS(conv2d(input, weight, {}, {.dilation = {1, 1, 1}}),
                       doctest::Contains("dilation must have 1 or 2 values"), Error);
  CHECK_THROWS_WITH_AS(conv1d(from_vector<int64_t>({1, 2, 3}, {1, 1, 3}), from_vector<int64_t>({1}, {1, 1, 1})),
                       doctest::Contains("must be floating"), Error);
}

}  // namespace test_conv
