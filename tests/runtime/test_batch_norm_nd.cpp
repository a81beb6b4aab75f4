// nn::BatchNorm2d / BatchNorm3d and the functional batch_norm against a float64 reference written
// here (statistics over every dim but the channels), the running estimates, eval mode, gradients
// by central differences, the mixed 16-bit path, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "numeric_check.h"
#include "runtime/ember.h"

namespace test_batch_norm_nd {

using namespace ember;
using namespace ember::testing;

namespace {

struct Statistics {
  std::vector<double> mean, biased_var, unbiased_var;
};

// Per channel (dim 1) over every other dim of `shape`.
Statistics channel_statistics(const std::vector<double>& x, const Dims& shape) {
  const int64_t channels = shape[1];
  std::vector<double> total(channels, 0.0), squares(channels, 0.0);
  std::vector<int64_t> count(channels, 0);
  for (int64_t flat = 0; flat < shape.product(); ++flat) {
    const int64_t c = unravel(flat, shape)[1];
    ++count[c];
    total[c] += x[flat];
  }
  Statistics stats;
  for (int64_t c = 0; c < channels; ++c) stats.mean.push_back(total[c] / count[c]);
  for (int64_t flat = 0; flat < shape.product(); ++flat) {
    const int64_t c = unravel(flat, shape)[1];
    squares[c] += (x[flat] - stats.mean[c]) * (x[flat] - stats.mean[c]);
  }
  for (int64_t c = 0; c < channels; ++c) {
    stats.biased_var.push_back(squares[c] / count[c]);
    stats.unbiased_var.push_back(squares[c] / (count[c] - 1));
  }
  return stats;
}

std::vector<double> normalised(const std::vector<double>& x, const Dims& shape, const std::vector<double>& mean,
                               const std::vector<double>& var, const std::vector<double>& weight,
                               const std::vector<double>& bias, double eps = 1e-5) {
  std::vector<double> y(x.size());
  for (int64_t flat = 0; flat < shape.product(); ++flat) {
    const int64_t c = unravel(flat, shape)[1];
    y[flat] = (x[flat] - mean[c]) / std::sqrt(var[c] + eps) * weight[c] + bias[c];
  }
  return y;
}

}  // namespace

TEST_CASE("BatchNorm2d and BatchNorm3d: training forward, running estimates and eval forward equal float64") {
  for (const Dims& shape : {Dims{3, 2, 4, 5}, Dims{2, 3, 2, 3, 4}}) {
    INFO("input shape ", shape);
    const int64_t channels = shape[1];
    const std::vector<double> weight = random_values(channels, 2), bias = random_values(channels, 3);
    const auto make = [&]() -> std::shared_ptr<nn::BatchNormImpl> {
      if (shape.size() == 4) return nn::BatchNorm2d({.num_features = channels, .dtype = kFloat64}).ptr();
      return nn::BatchNorm3d({.num_features = channels, .dtype = kFloat64}).ptr();
    };
    const std::shared_ptr<nn::BatchNormImpl> layer = make();
    {
      NoGradGuard no_grad;
      layer->weight.copy_(from_vector<double>(weight, {channels}, {.dtype = kFloat64}));
      layer->bias.copy_(from_vector<double>(bias, {channels}, {.dtype = kFloat64}));
    }
    std::vector<double> running_mean(channels, 0.0), running_var(channels, 1.0);
    for (int step = 0; step < 2; ++step) {
      const Tensor x = random_tensor(shape, 10 + step);
      const Statistics stats = channel_statistics(values_of(x), shape);
      check_close(layer->forward(x), normalised(values_of(x), shape, stats.mean, stats.biased_var, weight, bias),
                  1e-12);
      for (int64_t c = 0; c < channels; ++c) {
        running_mean[c] = 0.1 * stats.mean[c] + 0.9 * running_mean[c];
        running_var[c] = 0.1 * stats.unbiased_var[c] + 0.9 * running_var[c];
      }
    }
    check_close(layer->running_mean, running_mean, 1e-12);
    check_close(layer->running_var, running_var, 1e-12);
    layer->eval();
    const Tensor x = random_tensor(shape, 20);
    check_close(layer->forward(x), normalised(values_of(x), shape, running_mean, running_var, weight, bias), 1e-12);
  }
}

TEST_CASE("BatchNorm2d and BatchNorm3d: the input rank, repr and gradients") {
  nn::BatchNorm2d image(4);
  CHECK_THROWS_WITH_AS(image(random_tensor({2, 4, 3}, 30, kFloat32)),
                       doctest::Contains("BatchNorm2d: expected 4D input (got 3D input of shape [2, 4, 3])"), Error);
  CHECK_THROWS_WITH_AS(nn::BatchNorm3d(4)(random_tensor({2, 4, 3, 3}, 31, kFloat32)),
                       doctest::Contains("BatchNorm3d: expected 5D input (got 4D input"), Error);
  CHECK_THROWS_WITH_AS(nn::BatchNorm1d(4)(random_tensor({2, 4, 3, 3}, 32, kFloat32)),
                       doctest::Contains("BatchNorm1d: expected 2D or 3D input (got 4D input"), Error);
  CHECK_THROWS_WITH_AS(image(random_tensor({2, 3, 3, 3}, 33, kFloat32)),
                       doctest::Contains("BatchNorm2d: expected input with 4 channels"), Error);
  CHECK(image->str() == "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  CHECK(nn::BatchNorm3d({.num_features = 2, .momentum = std::nullopt, .affine = false})->str() ==
        "BatchNorm3d(2, eps=1e-05, momentum=None, affine=False, track_running_stats=True)");
  gradcheck([](const std::vector<Tensor>& in) { return batch_norm(in[0], {}, {}, in[1], in[2], /*training=*/true); },
            {random_tensor({2, 3, 2, 2}, 34), random_tensor({3}, 35), random_tensor({3}, 36)});
}

TEST_CASE("batch_norm (functional): training updates the estimates given, eval reads them") {
  const Tensor x = random_tensor({4, 3, 5}, 40);
  const Statistics stats = channel_statistics(values_of(x), x.sizes());
  Tensor running_mean = random_tensor({3}, 41), running_var = ember::abs(random_tensor({3}, 42));
  const std::vector<double> mean_before = values_of(running_mean), var_before = values_of(running_var);
  const std::vector<double> ones(3, 1.0), zeros(3, 0.0);
  const Tensor y = batch_norm(x, running_mean, running_var, {}, {}, true, 0.3, 1e-3);
  check_close(y, normalised(values_of(x), x.sizes(), stats.mean, stats.biased_var, ones, zeros, 1e-3), 1e-12);
  std::vector<double> mean_after, var_after;
  for (int c = 0; c < 3; ++c) {
    mean_after.push_back(0.3 * stats.mean[c] + 0.7 * mean_before[c]);
    var_after.push_back(0.3 * stats.unbiased_var[c] + 0.7 * var_before[c]);
  }
  check_close(running_mean, mean_after, 1e-12);
  check_close(running_var, var_after, 1e-12);
  // Eval: the estimates, unchanged by the call.
  const std::vector<double> updated_mean = values_of(running_mean);
  const Tensor weight = random_tensor({3}, 43), bias = random_tensor({3}, 44);
  check_close(batch_norm(x, running_mean, running_var, weight, bias),
              normalised(values_of(x), x.sizes(), mean_after, var_after, values_of(weight), values_of(bias)), 1e-12);
  check_close(running_mean, updated_mean, 0.0);
  // The module computes the same.
  nn::BatchNorm1d layer({.num_features = 3, .dtype = kFloat64});
  check_close(layer(x), values_of(batch_norm(x, {}, {}, layer->weight, layer->bias, true)), 1e-14);
}

TEST_CASE("batch_norm (functional): a bfloat16 input with float32 estimates, and the errors") {
  const Tensor x = random_tensor({6, 2, 3}, 50);
  const Tensor running_mean = zeros({2}), running_var = ones({2});
  const Tensor low = batch_norm(x.to(kBFloat16), running_mean, running_var, {}, {}, true);
  CHECK(low.dtype() == kBFloat16);
  CHECK(running_mean.dtype() == kFloat32);
  check_close(low, values_of(batch_norm(x, {}, {}, {}, {}, true)), 1e-2);
  CHECK_THROWS_WITH_AS(batch_norm(x, {}, {}), doctest::Contains("running_mean must be defined in evaluation mode"),
                       Error);
  CHECK_THROWS_WITH_AS(batch_norm(x, zeros({3}, {.dtype = kFloat64}), ones({3}, {.dtype = kFloat64})),
                       doctest::Contains("running_mean must be 1-D with the input's 2 channels"), Error);
  CHECK_THROWS_WITH_AS(batch_norm(random_tensor({1, 2}, 51), {}, {}, {}, {}, true),
                       doctest::Contains("Expected more than 1 value per channel when training"), Error);
  CHECK_THROWS_WITH_AS(batch_norm(random_tensor({4}, 52), {}, {}, {}, {}, true), doctest::Contains("at least 2 dims"),
                       Error);
}

}  // namespace test_batch_norm_nd
