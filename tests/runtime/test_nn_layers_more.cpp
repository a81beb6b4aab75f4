// InstanceNorm1d/2d/3d and F::instance_norm, the channel and alpha dropouts: float64 references
// computed here by loops, finite-difference gradients, reprs, state_dict keys and every error (the
// padding layers, Bilinear and trunc_normal_: test_nn_padding_bilinear_init.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <set>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "nn_layers_checks.h"
#include "runtime/ember.h"

namespace test_nn_layers_more {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;
using ember::testing::nn_layers::check_close;
using ember::testing::nn_layers::keys_of;
namespace F = ember::nn::functional;

namespace {


// ---- instance norm: per-instance loops over x viewed as [N, C, S] ----
struct InstanceStats {
  std::vector<double> mean, biased_var;  // [N * C]
};

InstanceStats instance_stats(const std::vector<double>& x, int64_t instances, int64_t spatial) {
  InstanceStats stats{std::vector<double>(instances), std::vector<double>(instances)};
  for (int64_t i = 0; i < instances; ++i) {
    double sum = 0.0;
    for (int64_t s = 0; s < spatial; ++s) sum += x[i * spatial + s];
    const double mean = sum / static_cast<double>(spatial);
    double squares = 0.0;
    for (int64_t s = 0; s < spatial; ++s) squares += (x[i * spatial + s] - mean) * (x[i * spatial + s] - mean);
    stats.mean[i] = mean;
    stats.biased_var[i] = squares / static_cast<double>(spatial);
  }
  return stats;
}

// y[n, c, s] = (x - mean_nc) / sqrt(var_nc + eps) * weight_c + bias_c; mean and var per instance or per channel.
std::vector<double> normalise(const std::vector<double>& x, int64_t batch, int64_t channels, int64_t spatial,
                              const std::function<double(int64_t, int64_t)>& mean_of,
                              const std::function<double(int64_t, int64_t)>& var_of, const std::vector<double>& weight,
                              const std::vector<double>& bias, double eps) {
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t at = (n * channels + c) * spatial + s;
        double value = (x[at] - mean_of(n, c)) / std::sqrt(var_of(n, c) + eps);
        if (!weight.empty()) value = value * weight[c] + bias[c];
        y[at] = value;
      }
  return y;
}

TEST_CASE(
    "F::instance_norm matches per-instance loops, updates the running stats as PyTorch and uses them when "
    "use_input_stats is false") {
  const int64_t batch = 3, channels = 2, height = 2, width = 3, spatial = height * width;
  const Tensor input = small_tensor({batch, channels, height, width}, 1);
  const Tensor weight = small_tensor({channels}, 2);
  const Tensor bias = small_tensor({channels}, 3);
  const std::vector<double> x = values_of(input);
  const InstanceStats stats = instance_stats(x, batch * channels, spatial);
  const double eps = 1e-3, momentum = 0.25;
  const auto instance_mean = [&](int64_t n, int64_t c) { return stats.mean[n * channels + c]; };
  const auto instance_var = [&](int64_t n, int64_t c) { return stats.biased_var[n * channels + c]; };
  const std::vector<double> expected =
      normalise(x, batch, channels, spatial, instance_mean, instance_var, values_of(weight), values_of(bias), eps);

  Tensor running_mean = ember::testing::doubles({0.5, -0.25});
  Tensor running_var = ember::testing::doubles({2.0, 0.75});
  const Tensor output = F::instance_norm(input, running_mean, running_var, weight, bias, true, momentum, eps);
  CHECK(output.sizes() == input.sizes());
  check_close(values_of(output), expected);
  // running = momentum * mean over n of the instance stat + (1 - momentum) * running (variance unbiased).
  std::vector<double> mean_expected{0.5, -0.25}, var_expected{2.0, 0.75};
  for (int64_t c = 0; c < channels; ++c) {
    double mean_sum = 0.0, var_sum = 0.0;
    for (int64_t n = 0; n < batch; ++n) {
      mean_sum += instance_mean(n, c);
      var_sum += instance_var(n, c) * spatial / (spatial - 1.0);
    }
    mean_expected[c] = momentum * mean_sum / batch + (1.0 - momentum) * mean_expected[c];
    var_expected[c] = momentum * var_sum / batch + (1.0 - momentum) * var_expected[c];
  }
  check_close(values_of(running_mean), mean_expected);
  check_close(values_of(running_var), var_expected);

  // Without input statistics the running ones normalise every instance, and stay as they are.
  const Tensor evaluated = F::instance_norm(input, running_mean, running_var, weight, bias, false, momentum, eps);
  const std::vector<double> eval_expected = normalise(
      x, batch, channels, spatial, [&](int64_t, int64_t c) { return mean_expected[c]; },
      [&](int64_t, int64_t c) { return var_expected[c]; }, values_of(weight), values_of(bias), eps);
  check_close(values_of(evaluated), eval_expected);
  check_close(values_of(running_mean), mean_expected);

  // No weight, no estimates: plain per-instance normalisation, on a 3-D input.
  const Tensor sequence = small_tensor({2, 3, 4}, 4);
  const InstanceStats sequence_stats = instance_stats(values_of(sequence), 6, 4);
  check_close(values_of(F::instance_norm(sequence)),
              normalise(
                  values_of(sequence), 2, 3, 4, [&](int64_t n, int64_t c) { return sequence_stats.mean[n * 3 + c]; },
                  [&](int64_t n, int64_t c) { return sequence_stats.biased_var[n * 3 + c]; }, {}, {}, 1e-5));
}

TEST_CASE("F::instance_norm gradients match central differences for input, weight and bias") {
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) { return F::instance_norm(in[0], {}, {}, in[1], in[2], true, 0.1, 1e-3); },
      {leaf({2, 3, 5}, 11), leaf({3}, 12), leaf({3}, 13)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::instance_norm(in[0]); }, {leaf({2, 2, 2, 3}, 14)});
}

TEST_CASE(
    "InstanceNorm modules: PyTorch's defaults, reprs, state_dict keys, running stats in train and eval, "
    "unbatched inputs") {
  nn::InstanceNorm2d plain(3);
  CHECK(plain->str() == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
  CHECK(keys_of(*plain).empty());
  nn::InstanceNorm1d tracked(nn::InstanceNormOptions{
      .num_features = 2, .momentum = 0.5, .affine = true, .track_running_stats = true, .dtype = kFloat64});
  CHECK(tracked->str() == "InstanceNorm1d(2, eps=1e-05, momentum=0.5, affine=True, track_running_stats=True)");
  CHECK(keys_of(*tracked) ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  CHECK(nn::InstanceNorm3d(nn::InstanceNormOptions{.num_features = 4, .momentum = std::nullopt})->str() ==
        "InstanceNorm3d(4, eps=1e-05, momentum=None, affine=False, track_running_stats=False)");

  // Training: the functional form with the same estimates gives the same output and the same update.
  const Tensor input = small_tensor({3, 2, 4}, 21);
  Tensor mean_copy = zeros({2}, {.dtype = kFloat64});
  Tensor var_copy = ones({2}, {.dtype = kFloat64});
  const Tensor expected = F::instance_norm(input, mean_copy, var_copy, {}, {}, true, 0.5);
  check_close(values_of(tracked->forward(input)), values_of(expected));
  check_close(values_of(tracked->running_mean), values_of(mean_copy));
  check_close(values_of(tracked->running_var), values_of(var_copy));
  CHECK(values_of(tracked->running_mean) != std::vector<double>{0.0, 0.0});
  // Eval: the estimates normalise, y = (x - running_mean) / sqrt(running_var + eps).
  tracked->eval();
  const std::vector<double> x = values_of(input), mean = values_of(mean_copy), var = values_of(var_copy);
  check_close(values_of(tracked->forward(input)), normalise(
                                                      x, 3, 2, 4, [&](int64_t, int64_t c) { return mean[c]; },
                                                      [&](int64_t, int64_t c) { return var[c]; }, {}, {}, 1e-5));
  // Without running estimates eval mode still normalises by the input's statistics.
  plain->eval();
  const Tensor image = small_tensor({2, 3, 2, 2}, 22);
  check_close(values_of(plain->forward(image)), values_of(F::instance_norm(image)));
  // An unbatched [C, H, W] input is the batched one with N = 1.
  const Tensor single = small_tensor({3, 2, 3}, 23);
  check_close(values_of(plain->forward(single)), values_of(F::instance_norm(single.unsqueeze(0)).squeeze(0)));
  CHECK(plain->forward(single).sizes() == single.sizes());
  // momentum = None is PyTorch's 0.0 here: the estimates never move; and instance norm never counts batches.
  nn::InstanceNorm1d frozen(nn::InstanceNormOptions{
      .num_features = 2, .momentum = std::nullopt, .track_running_stats = true, .dtype = kFloat64});
  frozen->forward(input);
  CHECK(values_of(frozen->running_mean) == std::vector<double>{0.0, 0.0});
  CHECK(values_of(frozen->running_var) == std::vector<double>{1.0, 1.0});
  CHECK(frozen->num_batches_tracked.item<int64_t>() == 0);
  CHECK(tracked->num_batches_tracked.item<int64_t>() == 0);
  // Without affine or estimates num_features is unused (PyTorch only warns).
  check_close(values_of(plain->forward(small_tensor({1, 5, 2, 2}, 24))),
              values_of(F::instance_norm(small_tensor({1, 5, 2, 2}, 24))));
}

TEST_CASE("F::instance_norm takes a bfloat16 input beside float32 parameters and returns bfloat16") {
  const Tensor input = small_tensor({2, 3, 8}, 5);
  const Tensor weight = small_tensor({3}, 6, kFloat32), bias = small_tensor({3}, 7, kFloat32);
  const Tensor output = F::instance_norm(input.to(kBFloat16), {}, {}, weight, bias);
  CHECK(output.dtype() == kBFloat16);
  const Tensor expected =
      F::instance_norm(input.to(kBFloat16).to(kFloat64), {}, {}, weight.to(kFloat64), bias.to(kFloat64));
  // Computed in float32 and rounded once: within bfloat16's half ulp (2^-9 relative) of the float64 result.
  check_close(values_of(output), values_of(expected), 1.0 / 256.0);
}

TEST_CASE("instance norm errors name the op, the values and the caller's line") {
  const Tensor input = small_tensor({2, 3, 4}, 31);
  const Tensor one_spatial = small_tensor({2, 3, 1}, 1), one_dim = small_tensor({3}, 1);
  const Tensor four_dims = small_tensor({2, 3, 4, 5}, 1), wrong_weight = ones({4}, {.dtype = kFloat64});
  const nn::InstanceNormOptions affine_four{.num_features = 4, .affine = true};
  // clang-format off
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages{
      error_of([&] { F::instance_norm(one_spatial); }),
      error_of([&] { F::instance_norm(one_dim); }),
      error_of([&] { F::instance_norm(input, {}, {}, {}, {}, false); }),
      error_of([&] { F::instance_norm(input, zeros({3}, {.dtype = kFloat64}), {}); }),
      error_of([&] { F::instance_norm(input, {}, {}, wrong_weight); }),
      error_of([&] { nn::InstanceNorm1d(3)->forward(four_dims); }),
      error_of([&] { nn::InstanceNorm2d(affine_four)->forward(input); }),
      error_of([&] { nn::InstanceNorm1d(-1); }),
  };
  // clang-format on
  ember::testing::check_messages_name_lines(
      messages,
      {"instance_norm: Expected more than 1 spatial element when training, got input size [2, 3, 1]",
       "instance_norm: expected an input of at least 2 dims", "Expected running_mean and running_var to be defined",
       "running_mean and running_var must be given together",
       "instance_norm: weight must be 1-D with the input's 3 channels (dim 1), got shape [4]",
       "InstanceNorm1d: expected 2D or 3D input (got 4D input",
       "expected input's size at dim=0 to match num_features (4)",
       "InstanceNorm1d: num_features must be non-negative, got -1"},
      first);
}

// ---- dropout ----
// The ratio y / x of each (sample, channel) slice [N, C, S]: checks it is constant across S and 0 or 1 / (1 - p);
// returns how many slices were dropped.
int64_t check_channel_mask(const Tensor& input, const Tensor& output, int64_t slices, double p) {
  const std::vector<double> x = values_of(input), y = values_of(output);
  const int64_t spatial = static_cast<int64_t>(x.size()) / slices;
  int64_t dropped = 0;
  for (int64_t slice = 0; slice < slices; ++slice) {
    const double ratio = y[slice * spatial] / x[slice * spatial];
    INFO("slice ", slice, " ratio ", ratio);
    CHECK((ratio == 0.0 || std::abs(ratio - 1.0 / (1.0 - p)) < 1e-12));
    for (int64_t s = 1; s < spatial; ++s)
      CHECK(std::abs(y[slice * spatial + s] - ratio * x[slice * spatial + s]) < 1e-12);
    dropped += ratio == 0.0 ? 1 : 0;
  }
  return dropped;
}

TEST_CASE("dropout1d/2d/3d zero whole channels with the right scale, at a binomial rate, reproducibly") {
  const double p = 0.3;
  const int64_t batch = 40, channels = 50;
  const Tensor input = small_tensor({batch, channels, 3, 2}, 41);
  manual_seed(2024);
  const Tensor output = F::dropout2d(input, p);
  const int64_t dropped = check_channel_mask(input, output, batch * channels, p);
  // Binomial(2000, 0.3): mean 600, standard deviation sqrt(2000 * 0.3 * 0.7) = 20.5; five of them.
  const double count = static_cast<double>(batch * channels);
  CHECK(std::abs(static_cast<double>(dropped) - p * count) <= 5.0 * std::sqrt(count * p * (1.0 - p)));
  manual_seed(2024);
  CHECK(values_of(F::dropout2d(input, p)) == values_of(output));
  CHECK(values_of(F::dropout2d(input, p)) != values_of(output));  // the stream moved on

  // dropout1d on [N, C, L] and unbatched [C, L]; dropout3d on [N, C, D, H, W] and [C, D, H, W];
  // dropout2d on 3-D reads [N, C, L], as PyTorch's.
  const Tensor sequence = small_tensor({6, 7, 5}, 42);
  check_channel_mask(sequence, F::dropout1d(sequence, 0.5), 42, 0.5);
  check_channel_mask(sequence, F::dropout2d(sequence, 0.5), 42, 0.5);
  const Tensor unbatched = small_tensor({30, 4}, 43);
  CHECK(check_channel_mask(unbatched, F::dropout1d(unbatched, 0.5), 30, 0.5) > 0);
  const Tensor volume = small_tensor({2, 5, 2, 2, 3}, 44);
  check_channel_mask(volume, F::dropout3d(volume, 0.4), 10, 0.4);
  const Tensor volume_unbatched = small_tensor({20, 2, 2, 3}, 45);
  const Tensor volume_output = F::dropout3d(volume_unbatched, 0.4);
  CHECK(volume_output.sizes() == volume_unbatched.sizes());
  check_channel_mask(volume_unbatched, volume_output, 20, 0.4);

  // Eval and p = 0 return the input; p = 1 zeroes everything.
  CHECK(values_of(F::dropout2d(input, p, false)) == values_of(input));
  CHECK(values_of(F::dropout1d(sequence, 0.0)) == values_of(sequence));
  for (double value : values_of(F::dropout3d(volume, 1.0))) CHECK(value == 0.0);
}

TEST_CASE("alpha dropouts: dropped values are a alpha (p - 1), kept ones a x + a alpha p, mean and variance kept") {
  const double p = 0.2, alpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1.0) * (1.0 - p));
  const Tensor input = small_tensor({8, 16, 5}, 51);
  const std::vector<double> x = values_of(input);
  manual_seed(9);
  const std::vector<double> y = values_of(F::feature_alpha_dropout(input, p, true));
  for (int64_t slice = 0; slice < 8 * 16; ++slice) {
    const bool kept = std::abs(y[slice * 5] - (a * x[slice * 5] + a * alpha * p)) < 1e-12;
    for (int64_t s = 0; s < 5; ++s) {
      const int64_t at = slice * 5 + s;
      CHECK(std::abs(y[at] - (kept ? a * x[at] + a * alpha * p : a * alpha * (p - 1.0))) < 1e-12);
    }
  }
  // A N(0, 1) input keeps mean 0 and variance 1; bounds from n = 4e5 samples (five standard errors;
  // the output's fourth moment stays below 5, so its sample variance's error is below sqrt(5 / n)).
  const int64_t count = 400000;
  const Tensor normal = randn({count}, {.dtype = kFloat64});
  const std::vector<double> z = values_of(F::alpha_dropout(normal, p, true));
  double sum = 0.0, squares = 0.0;
  for (double value : z) sum += value;
  const double mean = sum / count;
  for (double value : z) squares += (value - mean) * (value - mean);
  CHECK(std::abs(mean) < 5.0 / std::sqrt(count));
  CHECK(std::abs(squares / count - 1.0) < 5.0 * std::sqrt(5.0 / count));
  // PyTorch's default for the functional forms is training = false.
  CHECK(values_of(F::alpha_dropout(input)) == x);
}

TEST_CASE("channel dropout gradients match central differences under a fixed mask") {
  const auto seeded = [](auto function) {
    return [function](const std::vector<Tensor>& in) {
      manual_seed(77);
      return function(in[0]);
    };
  };
  gradcheck_leaves(seeded([](const Tensor& x) { return F::dropout2d(x, 0.4); }), {leaf({3, 4, 2, 2}, 61)});
  gradcheck_leaves(seeded([](const Tensor& x) { return F::dropout1d(x, 0.4); }), {leaf({5, 3}, 62)});
  gradcheck_leaves(seeded([](const Tensor& x) { return F::feature_alpha_dropout(x, 0.4, true); }),
                   {leaf({3, 4, 2}, 63)});
}

TEST_CASE("dropout modules: reprs, training gate, errors") {
  nn::Dropout2d layer(0.25);
  CHECK(layer->str() == "Dropout2d(p=0.25, inplace=False)");
  CHECK(nn::Dropout1d()->str() == "Dropout1d(p=0.5, inplace=False)");
  CHECK(nn::Dropout3d(1.0)->str() == "Dropout3d(p=1.0, inplace=False)");
  CHECK(nn::AlphaDropout(0.1)->str() == "AlphaDropout(p=0.1, inplace=False)");
  CHECK(nn::FeatureAlphaDropout()->str() == "FeatureAlphaDropout(p=0.5, inplace=False)");
  CHECK(keys_of(*layer).empty());
  const Tensor input = small_tensor({4, 6, 3, 3}, 71);
  manual_seed(3);
  const Tensor expected = F::dropout2d(input, 0.25);
  manual_seed(3);
  CHECK(values_of(layer->forward(input)) == values_of(expected));
  layer->eval();
  CHECK(values_of(layer->forward(input)) == values_of(input));
  nn::AlphaDropout alpha(0.5);
  alpha->eval();
  CHECK(values_of(alpha->forward(input)) == values_of(input));

  // clang-format off
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages{
      error_of([&] { F::dropout2d(input, 1.5); }),
      error_of([&] { F::dropout1d(input, 0.5); }),
      error_of([&] { F::dropout2d(small_tensor({5}, 1), 0.5); }),
      error_of([&] { nn::Dropout3d(-0.1); }),
      error_of([&] { F::alpha_dropout(ones({3}, {.dtype = kInt64}), 0.5, true); }),
  };
  // clang-format on
  ember::testing::check_messages_name_lines(
      messages,
      {"dropout2d: dropout probability has to be between 0 and 1, but got 1.5",
       "dropout1d: Expected 2D or 3D input, but received a 4D input",
       "dropout2d: Feature dropout requires at least 2 dimensions in the input, got shape [5]",
       "Dropout3d: dropout probability has to be between 0 and 1, but got -0.1",
       "alpha_dropout: expected a floating-point input, got dtype"},
      first);
}

}  // namespace

}  // namespace test_nn_layers_more
