// Batch norm (F.batch_norm in runtime/functional_batch_norm.cpp, nn::BatchNorm1d/2d/3d) against
// PyTorch's Normalization.cpp, with float64 references written here: mixed and all-16-bit dtypes
// (float32 accumulation, one rounding), eps = 0 over a constant channel (PyTorch's InvStd), empty
// batches, the cumulative average, eval without estimates, state_dict keys and reprs.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "numeric_check.h"
#include "runtime/ember.h"
#include "runtime/nn/modules/batch_norm.h"

namespace test_batch_norm_pytorch_parity {

using namespace ember;
using ember::testing::check_close;
using ember::testing::random_tensor;
using ember::testing::values_of;

TEST_CASE("parity: batch_norm with a 16-bit input and float32 bias alone returns the input's dtype") {
  // PyTorch's batch norm is mixed when the first parameter given (weight, bias, running_mean,
  // running_var) has another dtype than the input; it computes in float32 and its output keeps the
  // input's dtype (empty_like(input)).
  const Tensor x = random_tensor({4, 3, 5}, 61);
  const Tensor bias = random_tensor({3}, 62, kFloat32);
  for (const DType low : {kFloat16, kBFloat16}) {
    INFO(low);
    const Tensor y = batch_norm(x.to(low), {}, {}, {}, bias, /*training=*/true);
    CHECK(y.dtype() == low);
    // The reference: the 16-bit values normalised in float64, plus the bias.
    const std::vector<double> input = values_of(x.to(low)), shift = values_of(bias);
    std::vector<double> expected(input.size());
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < 4; ++n)
        for (int64_t l = 0; l < 5; ++l) sum += input[(n * 3 + c) * 5 + l];
      const double mean = sum / 20;
      for (int64_t n = 0; n < 4; ++n)
        for (int64_t l = 0; l < 5; ++l) squares += std::pow(input[(n * 3 + c) * 5 + l] - mean, 2);
      for (int64_t n = 0; n < 4; ++n)
        for (int64_t l = 0; l < 5; ++l) {
          const int64_t i = (n * 3 + c) * 5 + l;
          expected[i] = (input[i] - mean) / std::sqrt(squares / 20 + 1e-5) + shift[c];
        }
    }
    check_close(y, expected, low == kFloat16 ? 2e-3 : 1.6e-2);
  }
}

TEST_CASE("parity: a 16-bit batch norm with 16-bit parameters rounds once, as PyTorch's float accumulation") {
  // PyTorch's kernels (CPU and CUDA) keep the statistics and the transform in float32 for 16-bit
  // inputs whatever the parameters' dtype, rounding only the output; so each value is within half
  // an ulp of the float64 result on the same 16-bit numbers (plus float32's own error). A mean
  // rounded to 16 bits first would shift a whole channel by up to its half ulp (at values near 10
  // that is 2^-8 in fp16, far beyond a result near 0's half ulp).
  for (const DType low : {kFloat16, kBFloat16}) {
    INFO(low);
    const int mantissa = low == kFloat16 ? 10 : 7;
    const Tensor x = add(mul(random_tensor({8, 3, 6, 5}, 95), 3.0), 10.0).to(low);
    nn::BatchNorm2d layer({.num_features = 3, .dtype = low});
    {
      NoGradGuard no_grad;
      layer->weight.copy_(random_tensor({3}, 96).to(low));
      layer->bias.copy_(random_tensor({3}, 97).to(low));
    }
    const std::vector<double> v = values_of(x), w = values_of(layer->weight), b = values_of(layer->bias);
    std::vector<double> expected(v.size());
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < 8; ++n)
        for (int64_t k = 0; k < 30; ++k) sum += v[(n * 3 + c) * 30 + k];
      const double mean = sum / 240;
      for (int64_t n = 0; n < 8; ++n)
        for (int64_t k = 0; k < 30; ++k) squares += std::pow(v[(n * 3 + c) * 30 + k] - mean, 2);
      for (int64_t n = 0; n < 8; ++n)
        for (int64_t k = 0; k < 30; ++k) {
          const int64_t i = (n * 3 + c) * 30 + k;
          expected[i] = (v[i] - mean) / std::sqrt(squares / 240 + 1e-5) * w[c] + b[c];
        }
    }
    const auto check_rounded_once = [&](const Tensor& y) {
      CHECK(y.dtype() == low);
      const std::vector<double> got = values_of(y);
      size_t worst = 0;
      double worst_ratio = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double half_ulp = std::ldexp(1.0, std::ilogb(std::abs(expected[i])) - mantissa - 1);
        const double ratio = std::abs(got[i] - expected[i]) / (half_ulp + 1e-5);
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
      }
      INFO("element " << worst << ": got " << got[worst] << ", expected " << expected[worst]);
      CHECK(worst_ratio <= 1.0);
    };
    check_rounded_once(layer(x));
    check_rounded_once(batch_norm(x, {}, {}, layer->weight, layer->bias, /*training=*/true));
  }
}

TEST_CASE("parity: batch norm with eps = 0 over a constant channel gives the bias, as PyTorch's inverse std of 0") {
  // PyTorch's batch statistics take invstd = 0 where var == 0 and eps == 0 (its InvStd), so a
  // constant channel normalises to 0 (then the bias), not 0 * inf = NaN; its gradient is then 0.
  Tensor x = random_tensor({3, 2, 2, 2}, 71);
  {
    NoGradGuard no_grad;
    x.select(1, 1).fill_(2.5);  // channel 1 constant
  }
  x.requires_grad_();
  const Tensor weight = from_vector<double>({1.5, 2.0}, {2}, {.dtype = kFloat64});
  const Tensor bias = from_vector<double>({0.25, -0.75}, {2}, {.dtype = kFloat64});
  const Tensor y = batch_norm(x, {}, {}, weight, bias, /*training=*/true, 0.1, /*eps=*/0.0);
  const std::vector<double> got = values_of(y);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k) CHECK(got[(n * 2 + 1) * 4 + k] == -0.75);
  y.sum().backward();
  const std::vector<double> gradient = values_of(x.grad());
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k) CHECK(gradient[(n * 2 + 1) * 4 + k] == 0.0);
  for (const double g : gradient) CHECK_FALSE(std::isnan(g));

  nn::BatchNorm2d layer({.num_features = 2, .eps = 0.0, .dtype = kFloat64});
  const std::vector<double> from_module = values_of(layer(x.detach()));
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k) CHECK(from_module[(n * 2 + 1) * 4 + k] == 0.0);
}

TEST_CASE("parity: batch_norm on an empty batch: an empty result and the estimates unchanged") {
  // PyTorch's _batch_norm_impl_index returns before any update when the input has no elements.
  Tensor running_mean = from_vector<double>({0.5, -1}, {2}, {.dtype = kFloat64});
  Tensor running_var = from_vector<double>({2, 3}, {2}, {.dtype = kFloat64});
  const Tensor y = batch_norm(zeros({0, 2, 3, 3}, {.dtype = kFloat64}), running_mean, running_var, {}, {}, true);
  CHECK(y.sizes() == Dims{0, 2, 3, 3});
  CHECK(values_of(running_mean) == std::vector<double>{0.5, -1});
  CHECK(values_of(running_var) == std::vector<double>{2, 3});
  nn::BatchNorm3d layer({.num_features = 2, .dtype = kFloat64});
  CHECK(layer(zeros({0, 2, 1, 2, 2}, {.dtype = kFloat64})).sizes() == Dims{0, 2, 1, 2, 2});
  CHECK(values_of(layer->running_mean) == std::vector<double>{0, 0});
  CHECK(values_of(layer->running_var) == std::vector<double>{1, 1});
}

TEST_CASE("parity: BatchNorm2d's cumulative average, eval without estimates, state_dict keys and repr") {
  nn::BatchNorm2d layer({.num_features = 2, .momentum = std::nullopt, .dtype = kFloat64});
  std::vector<std::vector<double>> means(2), unbiased(2);
  for (uint32_t step = 0; step < 3; ++step) {
    const Tensor x = random_tensor({2, 2, 3, 2}, 80 + step);
    layer(x);
    const std::vector<double> v = values_of(x);
    for (int64_t c = 0; c < 2; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t k = 0; k < 6; ++k) sum += v[(n * 2 + c) * 6 + k];
      const double mean = sum / 12;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t k = 0; k < 6; ++k) squares += std::pow(v[(n * 2 + c) * 6 + k] - mean, 2);
      means[c].push_back(mean);
      unbiased[c].push_back(squares / 11);
    }
  }
  // Factor 1 / count: the running values are the plain averages (the initial 0 and 1 are
  // weighted by 0 after the first step).
  for (int64_t c = 0; c < 2; ++c) {
    CHECK(values_of(layer->running_mean)[c] ==
          doctest::Approx((means[c][0] + means[c][1] + means[c][2]) / 3).epsilon(1e-13));
    CHECK(values_of(layer->running_var)[c] ==
          doctest::Approx((unbiased[c][0] + unbiased[c][1] + unbiased[c][2]) / 3).epsilon(1e-13));
  }
  CHECK(layer->num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{3});
  CHECK(layer->state_dict().keys() ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  CHECK(layer->str() == "BatchNorm2d(2, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  CHECK(nn::BatchNorm3d({.num_features = 5, .eps = 1e-3, .momentum = 0.2})->str() ==
        "BatchNorm3d(5, eps=0.001, momentum=0.2, affine=True, track_running_stats=True)");

  // track_running_stats = false: no buffers, the batch's statistics in eval mode too, and
  // PyTorch's one-value-per-channel check then applies in eval mode as well.
  nn::BatchNorm2d stateless({.num_features = 2, .affine = false, .track_running_stats = false, .dtype = kFloat64});
  CHECK(stateless->state_dict().keys().empty());
  stateless->eval();
  const Tensor x = random_tensor({2, 2, 2, 1}, 90);
  stateless->train();
  const std::vector<double> trained = values_of(stateless(x));
  stateless->eval();
  CHECK(values_of(stateless(x)) == trained);
  CHECK_THROWS_WITH_AS(stateless(random_tensor({1, 2, 1, 1}, 91)),
                       doctest::Contains("Expected more than 1 value per channel when training"), Error);
}

}  // namespace test_batch_norm_pytorch_parity
