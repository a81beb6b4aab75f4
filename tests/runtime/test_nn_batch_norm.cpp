// nn::BatchNorm1d against a float64 reference written here: the training forward over [N, C] and
// [N, C, L], the running estimates after several steps (momentum 0.1 and the cumulative average),
// the eval forward, gradients by finite differences, the module's tensors and state dict, and
// every error.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_nn_batch_norm {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

// An input's values as [n, c, l] (l = 1 for a 2-D input), row-major.
struct Layout {
  int64_t n, c, l;
  explicit Layout(const Dims& shape) : n(shape[0]), c(shape[1]), l(shape.size() == 3 ? shape[2] : 1) {}
  int64_t at(int64_t i, int64_t channel, int64_t k) const { return (i * c + channel) * l + k; }
};

struct Statistics {
  std::vector<double> mean, biased_var, unbiased_var;
};

// Per channel, over n and l: the mean and the variance divided by count and by count - 1.
Statistics reference_statistics(const std::vector<double>& x, const Layout& layout) {
  Statistics stats;
  const auto count = static_cast<double>(layout.n * layout.l);
  for (int64_t channel = 0; channel < layout.c; ++channel) {
    double total = 0.0;
    for (int64_t i = 0; i < layout.n; ++i)
      for (int64_t k = 0; k < layout.l; ++k) total += x[layout.at(i, channel, k)];
    const double mean = total / count;
    double squares = 0.0;
    for (int64_t i = 0; i < layout.n; ++i)
      for (int64_t k = 0; k < layout.l; ++k) squares += std::pow(x[layout.at(i, channel, k)] - mean, 2);
    stats.mean.push_back(mean);
    stats.biased_var.push_back(squares / count);
    stats.unbiased_var.push_back(squares / (count - 1.0));
  }
  return stats;
}

// (x - mean) / sqrt(var + eps) * weight + bias, per channel.
std::vector<double> reference_normalise(const std::vector<double>& x, const Layout& layout,
                                        const std::vector<double>& mean, const std::vector<double>& var,
                                        const std::vector<double>& weight, const std::vector<double>& bias,
                                        double eps = 1e-5) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < layout.n; ++i)
    for (int64_t channel = 0; channel < layout.c; ++channel)
      for (int64_t k = 0; k < layout.l; ++k) {
        const int64_t at = layout.at(i, channel, k);
        y[at] = (x[at] - mean[channel]) / std::sqrt(var[channel] + eps) * weight[channel] + bias[channel];
      }
  return y;
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

const std::vector<double> kWeight{1.5, -0.5, 2.0};
const std::vector<double> kBias{0.1, -0.2, 0.3};

// A BatchNorm1d(3) of `dtype` whose weight and bias are kWeight and kBias (not the 1 and 0 they
// start at, so the affine part is checked).
nn::BatchNorm1d affine_batch_norm(DType dtype, std::optional<double> momentum = 0.1) {
  nn::BatchNorm1d batch_norm({.num_features = 3, .momentum = momentum, .dtype = dtype});
  NoGradGuard no_grad;
  batch_norm->weight.copy_(from_vector<double>(kWeight, {3}, {.dtype = dtype}));
  batch_norm->bias.copy_(from_vector<double>(kBias, {3}, {.dtype = dtype}));
  return batch_norm;
}

// Channel c's values shifted by c and scaled by c + 1, so the channels' statistics differ.
Tensor channel_input(const Dims& shape, uint32_t seed, DType dtype = kFloat64) {
  std::vector<double> values = testing::small_values(shape.product(), seed);
  const Layout layout(shape);
  for (int64_t i = 0; i < layout.n; ++i)
    for (int64_t c = 0; c < layout.c; ++c)
      for (int64_t k = 0; k < layout.l; ++k) {
        double& value = values[layout.at(i, c, k)];
        value = value * static_cast<double>(c + 1) + static_cast<double>(c);
      }
  return from_vector<double>(values, shape, {.dtype = dtype});
}

int64_t batches_tracked(const nn::BatchNorm1d& batch_norm) {
  return batch_norm->num_batches_tracked.to_vector<int64_t>().at(0);
}

}  // namespace

TEST_CASE("BatchNorm1d training forward equals the float64 reference for [N, C] and [N, C, L]") {
  for (const Dims& shape : {Dims{6, 3}, Dims{4, 3, 5}}) {
    INFO("input shape ", shape);
    const Tensor x = channel_input(shape, 1);
    const Layout layout(shape);
    const Statistics stats = reference_statistics(values_of(x), layout);
    const std::vector<double> expected =
        reference_normalise(values_of(x), layout, stats.mean, stats.biased_var, kWeight, kBias);
    nn::BatchNorm1d exact = affine_batch_norm(kFloat64);
    const Tensor y = exact(x);
    CHECK(y.sizes() == shape);
    CHECK(y.dtype() == kFloat64);
    check_close(values_of(y), expected, 1e-13);
    // The default float32 module, to float32's precision.
    nn::BatchNorm1d single = affine_batch_norm(kFloat32);
    const Tensor y32 = single(x.to(kFloat32));
    CHECK(y32.dtype() == kFloat32);
    check_close(values_of(y32), expected, 2e-6);
  }
}

TEST_CASE("BatchNorm1d running estimates after 3 steps: momentum 0.1 and the cumulative average") {
  for (const std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    INFO("momentum ", momentum.value_or(-1.0));
    nn::BatchNorm1d batch_norm = affine_batch_norm(kFloat64, momentum);
    std::vector<double> running_mean(3, 0.0), running_var(3, 1.0);
    for (int step = 0; step < 3; ++step) {
      const Tensor x = channel_input({5, 3, 2}, 10 + step).requires_grad_();
      const Statistics stats = reference_statistics(values_of(x), Layout(x.sizes()));
      batch_norm(x).sum().backward();
      const double factor = momentum.value_or(1.0 / (step + 1.0));
      for (int c = 0; c < 3; ++c) {
        running_mean[c] = factor * stats.mean[c] + (1.0 - factor) * running_mean[c];
        running_var[c] = factor * stats.unbiased_var[c] + (1.0 - factor) * running_var[c];
      }
    }
    check_close(values_of(batch_norm->running_mean), running_mean, 1e-14);
    check_close(values_of(batch_norm->running_var), running_var, 1e-14);
    CHECK(batches_tracked(batch_norm) == 3);
    // The update is not part of the autograd graph.
    CHECK_FALSE(batch_norm->running_mean.requires_grad());
    CHECK_FALSE(batch_norm->running_var.requires_grad());
    CHECK(batch_norm->running_mean.is_leaf());

    // Eval mode normalises with the estimates and leaves them (and the count) as they are.
    batch_norm->eval();
    const Tensor x = channel_input({4, 3}, 20);
    check_close(values_of(batch_norm(x)),
                reference_normalise(values_of(x), Layout(x.sizes()), running_mean, running_var, kWeight, kBias),
                1e-13);
    const Tensor one_row = channel_input({1, 3}, 21);  // one value per channel is fine in eval mode
    CHECK(batch_norm(one_row).sizes() == Dims{1, 3});
    check_close(values_of(batch_norm->running_mean), running_mean, 1e-14);
    CHECK(batches_tracked(batch_norm) == 3);
  }
}

TEST_CASE("BatchNorm1d gradients w.r.t. input, weight and bias match finite differences") {
  for (const Dims& shape : {Dims{6, 3}, Dims{4, 3, 5}}) {
    for (const bool training : {true, false}) {
      INFO("input shape ", shape, ", training ", training);
      nn::BatchNorm1d batch_norm = affine_batch_norm(kFloat64);
      if (!training) {
        batch_norm(channel_input(shape, 30));  // estimates other than 0 and 1
        batch_norm->eval();
      }
      const Tensor x = channel_input(shape, 31).requires_grad_();
      testing::gradcheck_leaves([&](const std::vector<Tensor>& inputs) { return batch_norm(inputs[0]); },
                         {x, batch_norm->weight, batch_norm->bias});
    }
  }
}

TEST_CASE("BatchNorm1d without affine or running estimates") {
  nn::BatchNorm1d plain({.num_features = 3, .affine = false, .track_running_stats = false, .dtype = kFloat64});
  CHECK(plain->parameters().empty());
  CHECK(plain->buffers().empty());
  CHECK_FALSE(plain->running_mean.defined());
  const Tensor x = channel_input({4, 3, 2}, 40);
  const Statistics stats = reference_statistics(values_of(x), Layout(x.sizes()));
  const std::vector<double> expected =
      reference_normalise(values_of(x), Layout(x.sizes()), stats.mean, stats.biased_var, {1, 1, 1}, {0, 0, 0});
  check_close(values_of(plain(x)), expected, 1e-13);
  plain->eval();  // without estimates, eval mode uses the batch's statistics too (PyTorch's rule)
  check_close(values_of(plain(x)), expected, 1e-13);
  plain->reset_parameters();  // nothing to reset
  plain->reset_running_stats();
}

TEST_CASE("BatchNorm1d: a float16 or bfloat16 input meets float32 parameters in float32") {
  for (const DType low : {kBFloat16, kFloat16}) {
    nn::BatchNorm1d mixed = affine_batch_norm(kFloat32);
    nn::BatchNorm1d single = affine_batch_norm(kFloat32);
    const Tensor x = channel_input({6, 3}, 50, low);
    const Tensor y = mixed(x);
    CHECK(y.dtype() == low);
    CHECK(values_of(y) == values_of(single(x.to(kFloat32)).to(low)));
    CHECK(mixed->running_mean.dtype() == kFloat32);
    CHECK(values_of(mixed->running_var) == values_of(single->running_var));
  }
}

TEST_CASE("BatchNorm1d on an empty batch: an empty output, the estimates unchanged, the count advanced") {
  nn::BatchNorm1d batch_norm(3);
  const Tensor y = batch_norm(empty({0, 3}));
  CHECK(y.sizes() == Dims{0, 3});
  CHECK(values_of(batch_norm->running_mean) == std::vector<double>{0, 0, 0});
  CHECK(values_of(batch_norm->running_var) == std::vector<double>{1, 1, 1});
  CHECK(batches_tracked(batch_norm) == 1);
}

TEST_CASE("BatchNorm1d's tensors, state dict, to(), resets and printing") {
  nn::BatchNorm1d batch_norm(3);
  CHECK(batch_norm->named_parameters().keys() == std::vector<std::string>{"weight", "bias"});
  CHECK(batch_norm->named_buffers().keys() ==
        std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  CHECK(batch_norm->state_dict().keys() ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  CHECK(batch_norm->num_batches_tracked.dtype() == kInt64);
  CHECK(batch_norm->num_batches_tracked.dim() == 0);
  CHECK(values_of(batch_norm->weight) == std::vector<double>{1, 1, 1});
  CHECK(values_of(batch_norm->bias) == std::vector<double>{0, 0, 0});

  batch_norm(channel_input({4, 3}, 60, kFloat32));
  batch_norm(channel_input({4, 3}, 61, kFloat32));
  // A fresh module loads the trained one's state and normalises alike in eval mode.
  nn::BatchNorm1d restored(3);
  restored->load_state_dict(batch_norm->state_dict());
  CHECK(values_of(restored->running_mean) == values_of(batch_norm->running_mean));
  CHECK(values_of(restored->running_var) == values_of(batch_norm->running_var));
  CHECK(batches_tracked(restored) == 2);
  batch_norm->eval();
  restored->eval();
  const Tensor x = channel_input({5, 3}, 62, kFloat32);
  CHECK(values_of(restored(x)) == values_of(batch_norm(x)));

  // to(dtype) converts the floating tensors; the count stays int64.
  restored->to(kFloat64);
  CHECK(restored->weight.dtype() == kFloat64);
  CHECK(restored->running_mean.dtype() == kFloat64);
  CHECK(restored->running_var.dtype() == kFloat64);
  CHECK(restored->num_batches_tracked.dtype() == kInt64);
  check_close(values_of(restored(x.to(kFloat64))), values_of(batch_norm(x)), 1e-6);

  {
    NoGradGuard no_grad;
    restored->weight.fill_(3.0);
  }
  restored->reset_running_stats();
  CHECK(values_of(restored->running_mean) == std::vector<double>{0, 0, 0});
  CHECK(values_of(restored->running_var) == std::vector<double>{1, 1, 1});
  CHECK(batches_tracked(restored) == 0);
  CHECK(values_of(restored->weight) == std::vector<double>{3, 3, 3});
  restored(channel_input({4, 3}, 63));
  restored->reset_parameters();
  CHECK(values_of(restored->weight) == std::vector<double>{1, 1, 1});
  CHECK(values_of(restored->running_mean) == std::vector<double>{0, 0, 0});
  CHECK(batches_tracked(restored) == 0);

  CHECK(batch_norm->str() == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  CHECK(nn::BatchNorm1d({.num_features = 4, .eps = 1e-3, .momentum = std::nullopt, .affine = false,
                         .track_running_stats = false})
            ->str() == "BatchNorm1d(4, eps=0.001, momentum=None, affine=False, track_running_stats=False)");
  CHECK(nn::BatchNorm1d(0)->weight.sizes() == Dims{0});  // 0 is a count here, not a null holder
  nn::Sequential model(nn::Linear(2, 3), nn::BatchNorm1d(3));
  CHECK(model->state_dict().keys() ==
        std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                 "1.num_batches_tracked"});
}

TEST_CASE("BatchNorm1d's errors name the module, the values and the caller's line, and change nothing") {
  nn::BatchNorm1d batch_norm(3);
  struct Case {
    std::string message, expected;
    int line;
  };
  std::vector<Case> cases;
  int line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(ones({3})); }),
                   "BatchNorm1d: expected 2D or 3D input (got 1D input of shape [3])", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(ones({2, 3, 4, 5})); }),
                   "BatchNorm1d: expected 2D or 3D input (got 4D input of shape [2, 3, 4, 5])", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(ones({2, 4})); }),
                   "BatchNorm1d: expected input with 3 channels (num_features) in dim 1, got 4 (input shape [2, 4])",
                   line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(ones({2, 3}, {.dtype = kInt64})); }),
                   "BatchNorm1d: expected a floating-point input, got dtype", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(ones({2, 3}, {.dtype = kFloat64})); }),
                   "does not match the module's dtype", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(ones({1, 3})); }),
                   "BatchNorm1d: Expected more than 1 value per channel when training, got input size [1, 3]", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(ones({1, 3, 1})); }),
                   "Expected more than 1 value per channel when training, got input size [1, 3, 1]", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { batch_norm(Tensor()); }), "BatchNorm1d: the input is an undefined tensor", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([] { nn::BatchNorm1d{-1}; }), "BatchNorm1d: num_features must be non-negative, got -1",
                   line});
  line = __LINE__ + 1;
  cases.push_back({error_of([] { nn::BatchNorm1d({.num_features = 3, .dtype = kInt32}); }),
                   "BatchNorm1d: dtype must be a floating-point type", line});
  // Without running estimates, eval mode takes the batch's statistics, so one value is refused too.
  nn::BatchNorm1d untracked({.num_features = 3, .track_running_stats = false});
  untracked->eval();
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { untracked(ones({1, 3})); }), "Expected more than 1 value per channel", line});
  for (const Case& c : cases) {
    INFO(c.message);
    CHECK(c.message.find(c.expected) != std::string::npos);
    CHECK(names_line(c.message, c.line));
  }
  // A refused batch changes nothing (PyTorch has counted it in num_batches_tracked by then).
  CHECK(batches_tracked(batch_norm) == 0);
  CHECK(values_of(batch_norm->running_mean) == std::vector<double>{0, 0, 0});
  CHECK(values_of(batch_norm->running_var) == std::vector<double>{1, 1, 1});
}

}  // namespace test_nn_batch_norm
