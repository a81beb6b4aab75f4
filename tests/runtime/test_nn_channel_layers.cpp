// F::local_response_norm, F::channel_shuffle and their modules, nn::Softmax2d, nn::Fold and
// nn::Unfold: float64 loops of PyTorch's definitions, finite-difference gradients, refusals with
// their call sites, and torch.nn's reprs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_nn_channel_layers {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;
namespace F = ember::nn::functional;

namespace {

// x viewed as [N, C, S]: y = x / (k + alpha / size * sum of x^2 over channels c - size / 2 ..
// c + (size - 1) / 2 inside [0, C))^beta.
std::vector<double> reference_local_response_norm(const Tensor& input, int64_t size, double alpha, double beta,
                                                  double k) {
  const std::vector<double> x = values_of(input);
  const int64_t batch = input.size(0), channels = input.size(1);
  const int64_t spatial = input.numel() / (batch * channels);
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        double squares = 0.0;
        for (int64_t other = c - size / 2; other <= c + (size - 1) / 2; ++other)
          if (other >= 0 && other < channels) {
            const double value = x[(n * channels + other) * spatial + s];
            squares += value * value;
          }
        const int64_t at = (n * channels + c) * spatial + s;
        y[at] = x[at] / std::pow(k + alpha * squares / static_cast<double>(size), beta);
      }
  return y;
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO(fmt::format("element {}: {} vs {}", i, actual[i], expected[i]));
    CHECK(std::abs(actual[i] - expected[i]) <= 1e-13 * (1.0 + std::abs(expected[i])));
  }
}

}  // namespace

TEST_CASE("local_response_norm divides by the windowed mean of squares over channels") {
  struct Case {
    Dims sizes;
    int64_t size;
    double alpha, beta, k;
  };
  // Odd and even sizes (the window reaches size / 2 before, (size - 1) / 2 after), a window wider
  // than the channels, 3-D, 4-D and 5-D inputs.
  const std::vector<Case> cases = {
      {{2, 5, 3}, 3, 0.5, 0.75, 1.0}, {{2, 6, 2, 3}, 2, 0.3, 0.5, 2.0},   {{1, 4, 2, 2, 3}, 5, 1.0, 1.5, 0.5},
      {{1, 3, 4}, 1, 2.0, 0.75, 1.0}, {{2, 3, 2, 2}, 8, 1e-4, 0.75, 1.0},
  };
  for (const Case& c : cases) {
    INFO(fmt::format("input {}, size {}", c.sizes, c.size));
    const Tensor input = small_tensor(c.sizes, 17);
    const Tensor output = F::local_response_norm(input, c.size, c.alpha, c.beta, c.k);
    CHECK(output.sizes() == c.sizes);
    check_close(values_of(output), reference_local_response_norm(input, c.size, c.alpha, c.beta, c.k));
  }
  // Hand-computed: one position, channels {1, 2, 3}, size 2 (the channel and the one before it).
  const Tensor column = testing::doubles({1.0, 2.0, 3.0}, {1, 3, 1});
  const std::vector<double> y = values_of(F::local_response_norm(column, 2, 1.0, 1.0, 1.0));
  CHECK(y[0] == doctest::Approx(1.0 / (1.0 + 1.0 / 2.0)).epsilon(1e-15));
  CHECK(y[1] == doctest::Approx(2.0 / (1.0 + 5.0 / 2.0)).epsilon(1e-15));
  CHECK(y[2] == doctest::Approx(3.0 / (1.0 + 13.0 / 2.0)).epsilon(1e-15));
  // An empty input comes back as it is.
  const Tensor empty = zeros({0, 3, 2});
  CHECK(F::local_response_norm(empty, 2).is_same(empty));
}

TEST_CASE("local_response_norm gradients match central differences") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::local_response_norm(in[0], 3, 0.5, 0.75, 1.0); },
            {leaf({2, 4, 3}, 41)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::local_response_norm(in[0], 2, 0.7, 1.25, 0.5); },
            {leaf({1, 5, 2, 2}, 42)});
}

TEST_CASE("channel_shuffle interleaves the groups' channels") {
  // 6 channels in 3 groups of 2: output channel j * 3 + g is input channel g * 2 + j.
  const Tensor input = arange(0, 2 * 6 * 2, 1, {.dtype = kFloat64}).reshape({2, 6, 2});
  const std::vector<double> x = values_of(input), y = values_of(F::channel_shuffle(input, 3));
  std::vector<double> expected(x.size());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t g = 0; g < 3; ++g)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t s = 0; s < 2; ++s) expected[(n * 6 + j * 3 + g) * 2 + s] = x[(n * 6 + g * 2 + j) * 2 + s];
  CHECK(y == expected);
  CHECK(values_of(F::channel_shuffle(testing::doubles({1, 2, 3, 4}, {1, 4, 1, 1}), 2)) ==
        std::vector<double>{1, 3, 2, 4});
  // A new tensor even when nothing moves (one group), as PyTorch's.
  const Tensor same = F::channel_shuffle(input, 1);
  CHECK(values_of(same) == x);
  CHECK(same.data_ptr<double>() != input.data_ptr<double>());
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::channel_shuffle(in[0].transpose(2, 3), 2); },
            {leaf({2, 4, 3, 2}, 43)});
}

TEST_CASE("local_response_norm, channel_shuffle and Softmax2d refuse bad inputs with the call site") {
  const Tensor matrix = small_tensor({2, 4}, 1), image = small_tensor({1, 4, 2, 2}, 2);
  nn::Softmax2d softmax2d;
  // One call per line: check_messages_name_lines counts them.
  // clang-format off
  const std::vector<std::string> messages = {
      error_of([&] { F::local_response_norm(matrix, 2); }),
      error_of([&] { F::local_response_norm(image, 0); }),
      error_of([&] { F::channel_shuffle(matrix, 2); }),
      error_of([&] { F::channel_shuffle(image, 0); }),
      error_of([&] { F::channel_shuffle(image, 3); }),
      error_of([&] { softmax2d(matrix); }),
      error_of([&] { softmax2d(image.unsqueeze(0)); }),
  };
  // clang-format on
  const int first_line = __LINE__ - 9;
  testing::check_messages_name_lines(
      messages,
      {"local_response_norm: Expected 3D or higher dimensionality input (got 2 dimensions, shape [2, 4])",
       "local_response_norm: size must be positive, got 0",
       "channel_shuffle: expects input to have at least 3 dimensions, but got input with 2 dimension(s)",
       "channel_shuffle: Number of groups to divide channels in must be positive. Value of groups: 0",
       "channel_shuffle: Number of channels must be divisible by groups. Got 4 channels and 3 groups",
       "Softmax2d: expected input to be 3D or 4D, got 2D instead", "Softmax2d: expected input to be 3D or 4D, got 5D"},
      first_line);
}

TEST_CASE("Softmax2d is softmax over the channels at each position") {
  const Tensor input = small_tensor({2, 3, 2, 2}, 44);
  const std::vector<double> x = values_of(input), y = values_of(nn::Softmax2d()(input));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t s = 0; s < 4; ++s) {
      double total = 0.0;
      for (int64_t c = 0; c < 3; ++c) total += std::exp(x[(n * 3 + c) * 4 + s]);
      for (int64_t c = 0; c < 3; ++c) {
        const int64_t at = (n * 3 + c) * 4 + s;
        CHECK(y[at] == doctest::Approx(std::exp(x[at]) / total).epsilon(1e-14));
      }
    }
  const Tensor unbatched = small_tensor({3, 2, 2}, 45);
  CHECK(values_of(nn::Softmax2d()(unbatched)) == values_of(softmax(unbatched, 0)));
}

TEST_CASE("LocalResponseNorm, ChannelShuffle, Softmax2d, Fold and Unfold print as torch.nn's") {
  CHECK(nn::LocalResponseNorm(2)->str() == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)");
  CHECK(nn::LocalResponseNorm({.size = 5, .alpha = 1e-5, .beta = 1.0, .k = 2.0})->str() ==
        "LocalResponseNorm(5, alpha=1e-05, beta=1.0, k=2.0)");
  CHECK(nn::ChannelShuffle(2)->str() == "ChannelShuffle(groups=2)");
  CHECK(nn::Softmax2d()->str() == "Softmax2d()");
  CHECK(nn::Fold({4, 5}, {2, 2})->str() ==
        "Fold(output_size=(4, 5), kernel_size=(2, 2), dilation=1, padding=0, stride=1)");
  CHECK(nn::Unfold(3, {.dilation = 2, .padding = {1, 0}, .stride = 2})->str() ==
        "Unfold(kernel_size=3, dilation=2, padding=(1, 0), stride=2)");
}

TEST_CASE("the channel modules and Fold and Unfold compute what their functions compute") {
  const Tensor input = small_tensor({2, 4, 3, 3}, 46);
  CHECK(values_of(nn::LocalResponseNorm(3)(input)) == values_of(F::local_response_norm(input, 3)));
  CHECK(values_of(nn::ChannelShuffle(2)(input)) == values_of(F::channel_shuffle(input, 2)));
  nn::Unfold unfold(2, {.padding = 1});
  const Tensor columns = unfold(input);
  CHECK(columns.sizes() == Dims{2, 16, 16});
  CHECK(values_of(columns) == values_of(F::unfold(input, 2, {.padding = 1})));
  nn::Fold fold({3, 3}, 2, {.padding = 1});
  CHECK(values_of(fold(columns)) == values_of(F::fold(columns, {3, 3}, 2, {.padding = 1})));
  // Non-overlapping windows: fold undoes unfold.
  const Tensor tiles = small_tensor({1, 2, 4, 6}, 47);
  CHECK(values_of(nn::Fold({4, 6}, 2, {.stride = 2})(nn::Unfold(2, {.stride = 2})(tiles))) == values_of(tiles));
}

}  // namespace test_nn_channel_layers
