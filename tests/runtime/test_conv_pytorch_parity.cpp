// The convolutions, unfold/fold and the Conv modules where a review against PyTorch's source found
// them different. Each case says what PyTorch does and where that is written (aten/src/ATen/native/
// Convolution.cpp's check_shape_forward and _select_conv_backend, im2col_shape_check.h,
// torch/nn/modules/conv.py); expected values come from conv_reference.h's float64 loops. Cases named
// "checked, no difference found" cover what the review compared and found equal, where the other
// conv tests did not reach (second derivatives of the weight, 3-D padding modes).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "conv_reference.h"
#include "error_of.h"
#include "numeric_check.h"
#include "runtime/autograd/grad.h"
#include "runtime/nn/modules/conv.h"

namespace test_conv_pytorch_parity {

using namespace ember;
using namespace ember::testing;

namespace {

Tensor zeros64(const Dims& sizes) { return zeros(sizes, {.dtype = kFloat64}); }

// d/d(wrt) sum(f(...)^2 * projection): a gradient that depends on every input, so gradcheck of it
// checks the second derivatives (gradcheck's differences run without gradients, hence the leaf).
Tensor squared_gradient(const Tensor& out, const Tensor& wrt, uint32_t seed) {
  const Tensor projection = random_tensor(out.sizes(), seed);
  return autograd::grad({mul(mul(out, out), projection).sum()}, {wrt}, {}, true, true)[0];
}

Tensor leaf(const Tensor& tensor) { return tensor.requires_grad() ? tensor : tensor.detach().requires_grad_(); }

// The input element that padded position p copies (p counted from the input's first element, so
// negative in the leading border) along a dim of `size`, by F.pad's documented modes: reflect
// mirrors without repeating the edge, replicate repeats the edge, circular wraps.
int64_t padded_source(int64_t p, int64_t size, nn::ConvPaddingMode mode) {
  switch (mode) {
    case nn::ConvPaddingMode::Reflect: {
      const int64_t q = p < 0 ? -p : p;
      return q >= size ? 2 * (size - 1) - q : q;
    }
    case nn::ConvPaddingMode::Replicate:
      return std::min<int64_t>(std::max<int64_t>(p, 0), size - 1);
    default:
      return ((p % size) + size) % size;
  }
}

}  // namespace

TEST_CASE("conv parity: an empty batch gives an empty result, but other empty inputs are errors, as PyTorch's") {
  // _select_conv_backend: a zero batch (or zero channels) takes the Empty backend, anything else
  // with no elements is "Only zero batch or zero channel inputs are supported".
  const Tensor weight = random_tensor({4, 3, 3, 3}, 1), bias = random_tensor({4}, 2);
  CHECK(conv2d(zeros64({0, 3, 5, 5}), weight, bias, {.padding = 1}).sizes() == Dims{0, 4, 5, 5});
  CHECK(conv_transpose2d(zeros64({0, 4, 3, 3}), random_tensor({4, 2, 3, 3}, 3), {}, {.stride = 2}).sizes() ==
        Dims{0, 2, 7, 7});
  // A spatial dim of 0 that the padding would otherwise fill: no result of pure padding.
  const Tensor weight1d = random_tensor({3, 2, 1}, 4);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { conv1d(zeros64({1, 2, 0}), weight1d, {}, {.padding = 1}); });
  CHECK(
      message.find("conv1d: only zero batch or zero channel inputs are supported, but got input of shape [1, 2, 0]") !=
      std::string::npos);
  CHECK(names_line(message, line));
  CHECK_THROWS_WITH_AS(conv2d(zeros64({2, 3, 4, 0}), weight, bias, {.padding = 2}),
                       doctest::Contains("only zero batch or zero channel inputs are supported"), Error);
  CHECK_THROWS_WITH_AS(conv_transpose1d(zeros64({1, 2, 0}), random_tensor({2, 2, 3}, 5)),
                       doctest::Contains("conv_transpose1d: only zero batch or zero channel inputs are supported"),
                       Error);
}

TEST_CASE("conv parity: a weight with fewer rows than groups (none at all) is an error, as PyTorch's") {
  // check_shape_forward: "Given groups=g, expected weight to be at least g at dimension 0". For
  // conv that dim is the output channels, for conv_transpose the input channels.
  const Tensor input = random_tensor({1, 3, 5, 5}, 6);
  CHECK_THROWS_WITH_AS(conv2d(input, zeros64({0, 3, 3, 3})),
                       doctest::Contains("conv2d: given groups=1, expected the weight to have at least 1 row at "
                                         "dimension 0, but got weight of shape [0, 3, 3, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(conv_transpose1d(zeros64({1, 0, 3}), zeros64({0, 2, 1})),
                       doctest::Contains("conv_transpose1d: given groups=1, expected the weight to have at least 1 "
                                         "row at dimension 0"),
                       Error);
  CHECK_THROWS_WITH_AS(conv_transpose1d(zeros64({1, 0, 3}), zeros64({0, 2, 1}), {}, {.groups = 2}),
                       doctest::Contains("at least 2 rows at dimension 0"), Error);
}

TEST_CASE("conv parity: a kernel with a size of 0 is an error, as in PyTorch's kernels") {
  // slow_conv2d / slow_conv3d / slow_conv_transpose shape checks: "kernel size should be greater
  // than zero". Without it the "window" of no elements fits one more time than the input's size.
  CHECK_THROWS_WITH_AS(conv1d(zeros64({1, 2, 3}), zeros64({2, 2, 0})),
                       doctest::Contains("conv1d: the kernel size must be greater than zero, got weight of shape "
                                         "[2, 2, 0]"),
                       Error);
  CHECK_THROWS_WITH_AS(conv_transpose2d(zeros64({1, 2, 3, 3}), zeros64({2, 2, 2, 0})),
                       doctest::Contains("conv_transpose2d: the kernel size must be greater than zero"), Error);
}

TEST_CASE("unfold parity: only the batch dim may be 0, also where the padding would fill a 0-size dim") {
  // im2col_shape_check: "Expected 3D or 4D (batch mode) tensor input with possible 0 batch size and
  // non-zero dimensions for input"; the padding is not counted.
  CHECK(unfold(zeros64({0, 3, 5, 5}), 3).sizes() == Dims{0, 27, 9});
  CHECK(fold(zeros64({0, 12, 9}), 4, 2).sizes() == Dims{0, 3, 4, 4});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { unfold(zeros64({1, 1, 0, 3}), 1, {.padding = 1}); });
  CHECK(message.find("unfold: expected a 3-D or 4-D (batched) input with non-zero channel and spatial dims (only the "
                     "batch may be 0), but got input of shape [1, 1, 0, 3]") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK_THROWS_WITH_AS(unfold(zeros64({0, 0, 3, 3}), 1), doctest::Contains("non-zero channel and spatial dims"), Error);
  CHECK_THROWS_WITH_AS(unfold(zeros64({2, 0, 3}), 1, {.padding = 1}),
                       doctest::Contains("non-zero channel and spatial dims"), Error);
}

TEST_CASE("conv parity: an unknown padding string is an error naming the op and the user's line") {
  // PyTorch raises it from F.conv2d / nn.Conv2d (a traceback at the call); ember's message named a
  // generic "conv" and no line, as the string was parsed before any call site was known.
  const Tensor input = random_tensor({1, 4, 6, 6}, 7), weight = random_tensor({2, 4, 3, 3}, 8);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { conv2d(input, weight, {}, {.padding = "full"}); });
  CHECK(message.find("conv2d: padding must be an amount, \"valid\" or \"same\", got \"full\"") != std::string::npos);
  CHECK(names_line(message, line));
  line = __LINE__ + 1;
  message = error_of([&] { nn::Conv1d(4, 2, 3, {.padding = "Same"}); });
  CHECK(message.find("Conv1d: padding must be an amount, \"valid\" or \"same\", got \"Same\"") != std::string::npos);
  CHECK(names_line(message, line));
}

TEST_CASE("conv parity: a kernel larger than the padded input names the dilated kernel's size") {
  // check_shape_forward prints "Kernel size: (5)" for a 3-tap kernel with dilation 2, the span
  // dilation (k - 1) + 1 that must fit; ember printed the undilated 3 as "the dilated kernel".
  CHECK_THROWS_WITH_AS(conv1d(random_tensor({1, 1, 4}, 9), random_tensor({1, 1, 3}, 10), {}, {.dilation = 2}),
                       doctest::Contains("conv1d: the padded input's spatial size [4] is smaller than the dilated "
                                         "kernel [5] (kernel [3], dilation [2])"),
                       Error);
  CHECK_THROWS_WITH_AS(
      conv2d(random_tensor({1, 1, 6, 2}, 11), random_tensor({1, 1, 2, 3}, 12), {},
             {.padding = {0, 1}, .dilation = {3, 2}}),
      doctest::Contains(
          "spatial size [6, 4] is smaller than the dilated kernel [4, 5] (kernel [2, 3], dilation [3, 2])"),
      Error);
}

TEST_CASE("conv_transpose parity: input channels not divisible by groups are named as such") {
  // check_shape_forward: "Given groups=3, expected weight to be divisible by 3 at dimension 0".
  // ember said "expected input ... to have 4 channels (divisible by groups), but got 4 channels".
  const Tensor input = random_tensor({1, 4, 5, 5}, 13), weight = random_tensor({4, 2, 3, 3}, 14);
  CHECK_THROWS_WITH_AS(conv_transpose2d(input, weight, {}, {.groups = 3}),
                       doctest::Contains("conv_transpose2d: given groups=3, expected the weight's dimension 0 (the 4 "
                                         "input channels) to be divisible by groups, but got weight of shape "
                                         "[4, 2, 3, 3]"),
                       Error);
  // A channel count that differs from the weight's still says so.
  CHECK_THROWS_WITH_AS(conv_transpose2d(random_tensor({1, 3, 5, 5}, 15), weight),
                       doctest::Contains("expected input of shape [1, 3, 5, 5] to have 4 channels, but got 3 channels"),
                       Error);
}

TEST_CASE(
    "conv parity (checked, no difference found): second derivatives w.r.t. the weight, of conv_transpose and fold") {
  gradcheck(
      [](const std::vector<Tensor>& in) {
        AutoGradMode enabled(true);
        const Tensor w = leaf(in[1]);
        return squared_gradient(conv2d(in[0], w, {}, {.stride = {1, 2}, .padding = 1, .dilation = {2, 1}}), w, 20);
      },
      {random_tensor({1, 2, 6, 6}, 21), random_tensor({2, 2, 2, 2}, 22)});
  gradcheck(
      [](const std::vector<Tensor>& in) {
        AutoGradMode enabled(true);
        const Tensor x = leaf(in[0]), w = leaf(in[1]);
        const Tensor out = conv_transpose2d(x, w, {}, {.stride = 2, .padding = 1, .output_padding = 1, .groups = 2});
        return add(squared_gradient(out, w, 23).sum(), squared_gradient(out, x, 24).sum());
      },
      {random_tensor({1, 4, 3, 3}, 25), random_tensor({4, 1, 3, 3}, 26)});
  gradcheck(
      [](const std::vector<Tensor>& in) {
        AutoGradMode enabled(true);
        const Tensor x = leaf(in[0]);
        return squared_gradient(fold(x, {4, 5}, 2, {.dilation = {1, 2}, .padding = {1, 0}}), x, 27);
      },
      {random_tensor({1, 8, 15}, 28)});
}

TEST_CASE(
    "Conv parity (checked, no difference found): Conv3d's padding modes, 'same' with even kernels, equal F.pad's "
    "rules") {
  // _conv_forward pads by _reversed_padding_repeated_twice (for 'same': dilation (k - 1), the odd
  // element after) in the mode, then convolves without padding; the padded input is built here
  // position by position from F.pad's documented rules and convolved by conv_reference.
  const Tensor x = random_tensor({2, 2, 4, 5, 6}, 29);
  for (const nn::ConvPaddingMode mode :
       {nn::ConvPaddingMode::Reflect, nn::ConvPaddingMode::Replicate, nn::ConvPaddingMode::Circular}) {
    for (const bool same : {false, true}) {
      INFO("mode ", static_cast<int>(mode), " same ", same);
      nn::Conv3d conv(2, 3, {2, 3, 4},
                      {.padding = same ? ConvPadding("same") : ConvPadding({1, 2, 1}),
                       .dilation = {1, 1, 2},
                       .padding_mode = mode,
                       .dtype = kFloat64});
      const Dims before = same ? Dims{0, 1, 3} : Dims{1, 2, 1}, after = same ? Dims{1, 1, 3} : Dims{1, 2, 1};
      std::vector<int64_t> padded = {2, 2};
      for (int d = 0; d < 3; ++d) padded.push_back(x.size(2 + d) + before[d] + after[d]);
      const std::vector<double> values = values_of(x);
      std::vector<double> padded_values;
      for_each_index(padded, [&](const std::vector<int64_t>& at) {
        std::vector<int64_t> source = {at[0], at[1]};
        for (int d = 0; d < 3; ++d) source.push_back(padded_source(at[2 + d] - before[d], x.size(2 + d), mode));
        padded_values.push_back(values[flat_index(source, {2, 2, 4, 5, 6})]);
      });
      std::vector<int64_t> shape;
      const std::vector<double> expected =
          conv_reference(from_vector<double>(padded_values, Dims(padded), {.dtype = kFloat64}), conv->weight,
                         conv->bias, {{1, 1, 1}, {0, 0, 0}, {1, 1, 2}}, shape);
      const Tensor result = conv(x);
      CHECK(result.sizes() == Dims(shape));
      check_close(result, expected, 1e-12);
      check_close(conv(x.select(0, 1)), values_of(result.select(0, 1)), 1e-12);  // unbatched
    }
  }
}

TEST_CASE("ConvTranspose parity: an output_size out of range is reported by its spatial sizes") {
  // _ConvTransposeNd._output_padding drops the batch and channel entries before it compares and
  // reports, so the sizes it names line up with the valid ranges; ember printed the list as given.
  nn::ConvTranspose2d up(4, 2, 3, {.stride = 2, .padding = 1, .dtype = kFloat64});
  const Tensor input = random_tensor({1, 4, 5, 6}, 30);
  CHECK_THROWS_WITH_AS(up->forward(input, Dims{1, 2, 11, 11}),
                       doctest::Contains("requested an output size of [11, 11], but valid sizes range from [9, 11] to "
                                         "[10, 12] (for an input of [5, 6])"),
                       Error);
  CHECK_THROWS_WITH_AS(up->forward(input.select(0, 0), Dims{2, 8, 11}),
                       doctest::Contains("requested an output size of [8, 11], but valid sizes range from [9, 11]"),
                       Error);
}

TEST_CASE("conv parity: the result is contiguous, so conv(x).view({N, -1}) works as in PyTorch") {
  // PyTorch's convolution gives a contiguous input a contiguous output (its memory format follows
  // the input's), and CNN heads flatten it with view. ember's groups == 1 path returned the GEMM's
  // [N, positions, C_out] transposed, a channels-last view that view() must refuse.
  const Tensor bias = random_tensor({4}, 31);
  for (const Dims& input_shape : {Dims{2, 3, 7}, Dims{2, 3, 6, 5}, Dims{2, 3, 4, 4, 3}}) {
    const int spatial = input_shape.size() - 2;
    INFO("spatial dims ", spatial);
    Dims weight_shape = {4, 3};
    for (int d = 0; d < spatial; ++d) weight_shape.push_back(2);
    const Tensor input = random_tensor(input_shape, 32), weight = random_tensor(weight_shape, 33);
    const ConvGeometry geometry{std::vector<int64_t>(spatial, 1), std::vector<int64_t>(spatial, 1),
                                std::vector<int64_t>(spatial, 1)};
    std::vector<int64_t> shape;
    const std::vector<double> expected = conv_reference(input, weight, bias, geometry, shape);
    for (const bool with_bias : {true, false}) {
      const Tensor b = with_bias ? bias : Tensor();
      const ConvOptions options{.padding = 1};
      const Tensor result = spatial == 1   ? conv1d(input, weight, b, options)
                            : spatial == 2 ? conv2d(input, weight, b, options)
                                           : conv3d(input, weight, b, options);
      CHECK(result.is_contiguous());
      if (with_bias) check_close(result.view({2, -1}), expected, 1e-12);
    }
  }
  nn::Conv2d conv(3, 4, 3, {.padding = 1, .dtype = kFloat64});
  const Tensor features = conv(random_tensor({2, 3, 5, 5}, 34));
  CHECK(features.is_contiguous());
  CHECK(features.view({2, -1}).sizes() == Dims{2, 100});
  CHECK(conv(random_tensor({3, 5, 5}, 35)).is_contiguous());  // unbatched
}

}  // namespace test_conv_pytorch_parity
