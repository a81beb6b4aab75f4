// nn::Conv1d/2d/3d and nn::ConvTranspose1d/2d/3d (runtime/nn/modules/conv.h): parameter shapes and
// PyTorch's initialisation bounds, forward against the functional convolutions (padding modes,
// "same", output_size), the constructors' checks, and PyTorch's repr text.
#include <doctest/doctest.h>

#include <cmath>

#include "numeric_check.h"
#include "runtime/nn/modules/conv.h"

namespace test_conv_modules {

using namespace ember;
using namespace ember::testing;

namespace {

// Every value within [-bound, bound], and spread over it (a draw, not a constant).
void check_uniform_within(const Tensor& tensor, double bound) {
  const std::vector<double> values = values_of(tensor);
  double low = bound, high = -bound;
  for (const double value : values) {
    low = std::min(low, value);
    high = std::max(high, value);
  }
  CHECK(low >= -bound);
  CHECK(high <= bound);
  CHECK(high - low > bound);  // hundreds of draws cover more than half the range
}

}  // namespace

TEST_CASE("Conv modules: parameter shapes and PyTorch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) initialisation") {
  nn::Conv2d conv(6, 8, {3, 2}, {.groups = 2});
  CHECK(conv->weight.sizes() == Dims{8, 3, 3, 2});
  CHECK(conv->bias.sizes() == Dims{8});
  CHECK(conv->weight.dtype() == kFloat32);
  CHECK(conv->parameters().size() == 2);
  check_uniform_within(conv->weight, 1.0 / std::sqrt(3.0 * 3 * 2));
  nn::Conv3d cube(2, 64, 2, {.bias = false, .dtype = kFloat64});
  CHECK(cube->weight.sizes() == Dims{64, 2, 2, 2, 2});
  CHECK_FALSE(cube->bias.defined());
  check_uniform_within(cube->weight, 1.0 / std::sqrt(16.0));
  // The transposed weight is [in, out / groups, K...], and fan_in is its size(1) times the kernel.
  nn::ConvTranspose1d up(4, 60, 3, {.groups = 2});
  CHECK(up->weight.sizes() == Dims{4, 30, 3});
  check_uniform_within(up->weight, 1.0 / std::sqrt(90.0));
  check_uniform_within(nn::ConvTranspose2d(3, 40, 2)->bias, 1.0 / std::sqrt(160.0));
  // A seeded generator draws the same parameters twice.
  Generator first(7), second(7);
  CHECK(values_of(nn::Conv1d(3, 4, 2, {.generator = &first})->weight) ==
        values_of(nn::Conv1d(3, 4, 2, {.generator = &second})->weight));
}

TEST_CASE("Conv modules: forward is the functional convolution, with padding modes and \"same\"") {
  const Tensor input = random_tensor({2, 4, 7, 6}, 200, kFloat32);
  nn::Conv2d plain(4, 6, 3, {.stride = {2, 1}, .padding = 1, .dilation = {1, 2}, .groups = 2});
  check_close(plain(input),
              values_of(conv2d(input, plain->weight, plain->bias,
                               {.stride = {2, 1}, .padding = 1, .dilation = {1, 2}, .groups = 2})),
              1e-6);
  for (const auto& [mode, pad_mode] :
       std::vector<std::pair<nn::ConvPaddingMode, PadMode>>{{nn::ConvPaddingMode::Reflect, PadMode::Reflect},
                                                            {nn::ConvPaddingMode::Replicate, PadMode::Replicate},
                                                            {nn::ConvPaddingMode::Circular, PadMode::Circular}}) {
    nn::Conv2d conv(4, 3, {3, 2}, {.padding = {1, 2}, .padding_mode = mode});
    const Tensor expected = conv2d(ember::pad(input, {2, 2, 1, 1}, pad_mode), conv->weight, conv->bias);
    check_close(conv(input), values_of(expected), 1e-6);
  }
  // "same" with an even kernel and a border mode: the odd element goes after, as PyTorch's.
  nn::Conv1d same(4, 2, 4, {.padding = "same", .dilation = 1, .padding_mode = nn::ConvPaddingMode::Reflect});
  const Tensor line = random_tensor({3, 4, 9}, 201, kFloat32);
  const Tensor result = same(line);
  CHECK(result.sizes() == Dims{3, 2, 9});
  check_close(result, values_of(conv1d(ember::pad(line, {1, 2}, PadMode::Reflect), same->weight, same->bias)), 1e-6);
  // Unbatched input.
  check_close(same(line.select(0, 2)), values_of(result.select(0, 2)), 1e-6);
}

TEST_CASE("ConvTranspose modules: forward, and output_size picks the output_padding") {
  nn::ConvTranspose2d up(4, 2, 3, {.stride = 2, .padding = 1, .dtype = kFloat64});
  const Tensor input = random_tensor({1, 4, 5, 6}, 210);
  const Tensor plain = up(input);
  CHECK(plain.sizes() == Dims{1, 2, 9, 11});
  check_close(plain, values_of(conv_transpose2d(input, up->weight, up->bias, {.stride = 2, .padding = 1})), 1e-12);
  // 10 x 12 needs output_padding 1 in both dims; the full [N, C, H, W] form gives the same.
  const Tensor sized = up->forward(input, Dims{10, 12});
  CHECK(sized.sizes() == Dims{1, 2, 10, 12});
  check_close(
      sized, values_of(conv_transpose2d(input, up->weight, up->bias, {.stride = 2, .padding = 1, .output_padding = 1})),
      1e-12);
  check_close(
      up->forward(input, Dims{1, 2, 10, 11}),
      values_of(conv_transpose2d(input, up->weight, up->bias, {.stride = 2, .padding = 1, .output_padding = {1, 0}})),
      1e-12);
  CHECK_THROWS_WITH_AS(up->forward(input, Dims{11, 11}),
                       doctest::Contains("requested an output size of [11, 11], but valid sizes range from [9, 11] to "
                                         "[10, 12] (for an input of [5, 6])"),
                       Error);
  CHECK_THROWS_WITH_AS(up->forward(input, Dims{10}), doctest::Contains("output_size must have 2 or 4 elements"), Error);
}

TEST_CASE("Conv modules: the constructors check groups, channels, sizes and 'same' with a stride") {
  CHECK_THROWS_WITH_AS(nn::Conv2d(5, 4, 3, {.groups = 2}),
                       doctest::Contains("Conv2d: in_channels must be divisible by groups, got in_channels=5 groups=2"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::ConvTranspose1d(4, 5, 3, {.groups = 2}),
                       doctest::Contains("out_channels must be divisible by groups"), Error);
  CHECK_THROWS_WITH_AS(nn::Conv1d(2, 2, 3, {.groups = 0}), doctest::Contains("groups must be a positive integer"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Conv2d(2, 2, 3, {.stride = 2, .padding = "same"}),
                       doctest::Contains("padding='same' is not supported for strided convolutions"), Error);
  CHECK_THROWS_WITH_AS(nn::Conv2d(2, 2, {3, 0}), doctest::Contains("kernel_size, stride and dilation must be positive"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Conv3d(2, 2, {3, 3}), doctest::Contains("kernel_size must have 1 or 3 values"), Error);
  CHECK_THROWS_WITH_AS(nn::Conv1d(2, 2, 3, {.padding = -1}), doctest::Contains("padding must be non-negative"), Error);
}

TEST_CASE("Conv modules: repr is PyTorch's text") {
  CHECK(nn::Conv2d(16, 33, 3, {.stride = 2})->str() == "Conv2d(16, 33, kernel_size=(3, 3), stride=(2, 2))");
  CHECK(nn::Conv2d(16, 33, {3, 5}, {.stride = {2, 1}, .padding = {4, 2}, .dilation = {3, 1}})->str() ==
        "Conv2d(16, 33, kernel_size=(3, 5), stride=(2, 1), padding=(4, 2), dilation=(3, 1))");
  CHECK(nn::Conv1d(4, 8, 3, {.padding = 1, .groups = 2, .bias = false, .padding_mode = nn::ConvPaddingMode::Circular})
            ->str() ==
        "Conv1d(4, 8, kernel_size=(3,), stride=(1,), padding=(1,), groups=2, bias=False, "
        "padding_mode=circular)");
  CHECK(nn::Conv3d(2, 4, 3, {.padding = "same"})->str() ==
        "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same)");
  CHECK(nn::Conv1d(2, 4, 3, {.padding = "valid"})->str() ==
        "Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=valid)");
  CHECK(nn::ConvTranspose2d(16, 33, 3, {.stride = 2, .output_padding = 1})->str() ==
        "ConvTranspose2d(16, 33, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))");
  CHECK(nn::ConvTranspose1d(4, 4, 2, {.padding = 1, .groups = 4, .bias = false, .dilation = 2})->str() ==
        "ConvTranspose1d(4, 4, kernel_size=(2,), stride=(1,), padding=(1,), dilation=(2,), groups=4, bias=False)");
}

TEST_CASE("Conv modules: no input channels draw nothing (PyTorch skips the bias draw), the bias is 0") {
  Generator used(5), fresh(5);
  nn::Conv2d empty_in(0, 4, 3, {.generator = &used});
  CHECK(empty_in->weight.sizes() == Dims{4, 0, 3, 3});
  CHECK(values_of(empty_in->bias) == std::vector<double>(4, 0.0));
  // The generator's stream did not move: its next draw is a fresh one's first.
  Tensor next = empty({3}, {.dtype = kFloat64}), first = empty({3}, {.dtype = kFloat64});
  nn::init::uniform_(next, 0.0, 1.0, &used);
  nn::init::uniform_(first, 0.0, 1.0, &fresh);
  CHECK(values_of(next) == values_of(first));
}

}  // namespace test_conv_modules
