// binary_cross_entropy and binary_cross_entropy_with_logits (composites,
// runtime/functional_losses_pointwise.cpp): float64 loops of PyTorch's formulas for every
// reduction, with weight and pos_weight, the clamp of the log at -100, stability for large
// logits, gradients by finite differences, and the argument errors.
#include <doctest/doctest.h>

#include <cmath>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "numeric_check.h"

namespace test_losses_binary {

using namespace ember;
using namespace ember::testing;

namespace {

// Values in [0.05, 0.95]: probabilities away from the clamp.
Tensor probabilities(const Dims& sizes, uint32_t seed, DType dtype = kFloat64) {
  std::vector<double> values = random_values(sizes.product(), seed);
  for (double& value : values) value = (value + 2.5) / 5.0;
  return from_vector<double>(values, sizes, {.dtype = dtype});
}

// PyTorch's CPU formula, with the [4] weight broadcast over rows of 4.
std::vector<double> bce_reference(const Tensor& input, const Tensor& target, const std::vector<double>& weight,
                                  Reduction reduction) {
  const std::vector<double> x = values_of(input), y = values_of(target);
  std::vector<double> losses;
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = weight.empty() ? 1.0 : weight[i % weight.size()];
    losses.push_back(-w * (y[i] * std::max(std::log(x[i]), -100.0) +
                           (1 - y[i]) * std::max(std::log1p(-x[i]), -100.0)));
  }
  return reduced(losses, reduction);
}

// -w (p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))), with log sigmoid(x) = -log1p(exp(-x))
// for x >= 0 and x - log1p(exp(x)) below: no overflow either way.
double log_sigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }

std::vector<double> bce_logits_reference(const Tensor& input, const Tensor& target, const std::vector<double>& weight,
                                         const std::vector<double>& pos_weight, Reduction reduction) {
  const std::vector<double> x = values_of(input), y = values_of(target);
  std::vector<double> losses;
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = weight.empty() ? 1.0 : weight[i % weight.size()];
    const double p = pos_weight.empty() ? 1.0 : pos_weight[i % pos_weight.size()];
    losses.push_back(-w * (p * y[i] * log_sigmoid(x[i]) + (1 - y[i]) * log_sigmoid(-x[i])));
  }
  return reduced(losses, reduction);
}

}  // namespace

TEST_CASE("binary_cross_entropy matches PyTorch's formula for every reduction, with and without weight") {
  const std::vector<double> weight{0.5, 2.0, 1.0, 3.0};
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    const Tensor input = probabilities({3, 4}, 30, dtype);
    // Soft targets and hard 0 / 1 targets.
    const Tensor hard_target = gt(random_tensor({3, 4}, 32), zeros({1}, {.dtype = kFloat64}));
    for (const Tensor& target : {probabilities({3, 4}, 31, dtype), hard_target}) {
      const Tensor floating_target = target.to(dtype);
      for (Reduction reduction : kLossReductions) {
        INFO(dtype_name(dtype) << " reduction " << static_cast<int>(reduction));
        check_close(binary_cross_entropy(input, floating_target, {}, reduction),
                    bce_reference(input, floating_target, {}, reduction), tolerance);
        const Tensor weight_tensor = from_vector<double>(weight, {4}, {.dtype = dtype});
        const Tensor result = binary_cross_entropy(input, floating_target, weight_tensor, reduction);
        CHECK(result.dtype() == dtype);
        check_close(result, bce_reference(input, floating_target, weight, reduction), tolerance);
      }
    }
  }
}

TEST_CASE("binary_cross_entropy clamps the log at -100 and takes PyTorch's gradient at 0 and 1") {
  const Tensor input = from_vector<double>({0.0, 1.0, 1e-50, 0.0, 1e-13, 0.25}).requires_grad_();
  const Tensor target = from_vector<double>({1.0, 0.0, 1.0, 0.0, 0.0, 1.0});
  const Tensor losses = binary_cross_entropy(input, target, {}, Reduction::None);
  check_close(losses, {100.0, 100.0, 100.0, 0.0, -std::log1p(-1e-13), -std::log(0.25)}, 1e-15);
  losses.sum().backward();
  // PyTorch's backward, (x - y) / max(x (1 - x), 1e-12), also where the clamp holds the log at
  // -100 and below 1e-12 (the formula's own derivative would be -1e50 at 1e-50, 1 at 1e-13).
  check_close(input.grad(), {-1e12, 1e12, -1e12, 0.0, 0.1, -4.0}, 1e-15);
}

TEST_CASE("binary_cross_entropy of a saturated float32 sigmoid has a finite gradient, as in PyTorch") {
  // sigmoid(-92) is a subnormal float32 (~1e-40): -y / x would overflow to -inf.
  const Tensor logits = from_vector<float>({-92.0f, -80.0f, 3.0f, -1.0f}).requires_grad_();
  const Tensor target = from_vector<float>({1.0f, 1.0f, 1.0f, 0.0f});
  const Tensor p = sigmoid(logits);
  binary_cross_entropy(p, target, {}, Reduction::Sum).backward();
  const std::vector<double> probability = values_of(p), y = values_of(target), grad = values_of(logits.grad());
  for (size_t i = 0; i < grad.size(); ++i) {
    INFO("logit " << values_of(logits)[i]);
    const double slope = probability[i] * (1.0 - probability[i]);  // sigmoid's derivative
    const double expected = (probability[i] - y[i]) / std::max(slope, 1e-12) * slope;
    CHECK(std::isfinite(grad[i]));
    CHECK(grad[i] == doctest::Approx(expected).epsilon(1e-5));
  }
  CHECK(grad[0] < 0.0);
}

TEST_CASE("binary_cross_entropy's second derivatives are PyTorch's double backward") {
  // d2/dx2 = (x^2 - 2xy + y) / ((x + 1e-12)^2 (1 - x + 1e-12)^2); d2/dxdy = -1 / max(x (1 - x), 1e-12).
  const std::vector<double> xs{0.2, 0.7, 0.5, 1e-14}, ys{1.0, 0.0, 0.3, 1.0};
  const Tensor x = from_vector<double>(xs).requires_grad_();
  const Tensor y = from_vector<double>(ys).requires_grad_();
  const Tensor first = autograd::grad({binary_cross_entropy(x, y, {}, Reduction::Sum)}, {x}, {}, std::nullopt,
                                      /*create_graph=*/true)[0];
  const std::vector<Tensor> second = autograd::grad({first.sum()}, {x, y});
  std::vector<double> xx, xy;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double a = xs[i], b = ys[i];
    xx.push_back((a * a - 2 * a * b + b) / (std::pow(a + 1e-12, 2) * std::pow(1 - a + 1e-12, 2)));
    xy.push_back(-1.0 / std::max(a * (1 - a), 1e-12));
  }
  check_close(second[0], xx, 1e-14);
  check_close(second[1], xy, 1e-14);
}

TEST_CASE("binary_cross_entropy's float32 gradient is PyTorch's quotient, exact where y is near x") {
  // -y/x + (1 - y)/(1 - x) would cancel to float32 noise here; (x - y) / (x (1 - x)) does not.
  const float x0 = 0.7f, y0 = std::nextafter(0.7f, 1.0f);
  const Tensor x = from_vector<float>({x0, 0.25f}).requires_grad_();
  const Tensor y = from_vector<float>({y0, 0.75f});
  binary_cross_entropy(x, y, {}, Reduction::Sum).backward();
  const std::vector<double> grad = values_of(x.grad());
  const double expected = (static_cast<double>(x0) - y0) / (static_cast<double>(x0) * (1.0 - x0));
  CHECK(grad[0] == doctest::Approx(expected).epsilon(1e-6));
  CHECK(grad[1] == doctest::Approx(-0.5 / 0.1875).epsilon(1e-6));
}

TEST_CASE("binary_cross_entropy at exactly 0 or 1 stays finite in every float dtype, target gradient too") {
  // sigmoid(10) rounds to 1.0 in float16; the target's gradient is the clamped -100 / 100.
  for (DType dtype : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    INFO(dtype);
    const Tensor x = from_vector<float>({1.0f, 0.0f, 0.5f}).to(dtype).requires_grad_();
    const Tensor y = from_vector<float>({0.0f, 1.0f, 0.25f}).to(dtype).requires_grad_();
    const Tensor losses = binary_cross_entropy(x, y, {}, Reduction::None);
    const std::vector<double> values = values_of(losses);
    CHECK(values[0] == 100.0);
    CHECK(values[1] == 100.0);
    losses.sum().backward();
    const std::vector<double> target_grad = values_of(y.grad());
    CHECK(target_grad[0] == -100.0);
    CHECK(target_grad[1] == 100.0);
    CHECK(std::abs(target_grad[2]) < 1e-3);  // log(0.5) - log(0.5), each rounded to the dtype
    const std::vector<double> input_grad = values_of(x.grad());
    CHECK(input_grad[2] == 1.0);  // (0.5 - 0.25) / 0.25
    if (dtype == kFloat32 || dtype == kFloat64) {
      check_close(input_grad, {1e12, -1e12, 1.0}, 1e-6);
    } else {  // past float16's range, and rounded in bfloat16; never NaN
      CHECK(input_grad[0] > 0.0);
      CHECK(input_grad[1] < 0.0);
    }
  }
}

TEST_CASE("a float64 weight or pos_weight keeps a float32 binary cross entropy in float32") {
  // PyTorch multiplies the weights in place into the loss of the input's dtype.
  const Tensor x = from_vector<float>({0.3f, 0.8f}), y = from_vector<float>({0.0f, 1.0f});
  const Tensor w = from_vector<double>({0.5, 2.0});
  const Tensor weighted = binary_cross_entropy(x, y, w, Reduction::None);
  CHECK(weighted.dtype() == kFloat32);
  const std::vector<double> plain = values_of(binary_cross_entropy(x, y, {}, Reduction::None));
  CHECK(values_of(weighted) ==
        std::vector<double>{static_cast<float>(plain[0] * 0.5), static_cast<float>(plain[1] * 2.0)});
  CHECK(binary_cross_entropy_with_logits(x, y, w).dtype() == kFloat32);
  CHECK(binary_cross_entropy_with_logits(x, y, {}, Reduction::Mean, w).dtype() == kFloat32);
}

TEST_CASE("binary_cross_entropy_with_logits matches the float64 formula, with weight and pos_weight") {
  const std::vector<double> weight{0.5, 2.0, 1.0, 3.0}, pos_weight{1.0, 4.0, 0.5, 2.0};
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    const Tensor logits = mul(random_tensor({3, 4}, 33, dtype), 5.0);
    const Tensor target = probabilities({3, 4}, 34, dtype);
    const Tensor weight_tensor = from_vector<double>(weight, {4}, {.dtype = dtype});
    const Tensor pos_weight_tensor = from_vector<double>(pos_weight, {4}, {.dtype = dtype});
    for (Reduction reduction : kLossReductions) {
      INFO(dtype_name(dtype) << " reduction " << static_cast<int>(reduction));
      check_close(binary_cross_entropy_with_logits(logits, target, {}, reduction),
                  bce_logits_reference(logits, target, {}, {}, reduction), tolerance);
      check_close(binary_cross_entropy_with_logits(logits, target, weight_tensor, reduction, pos_weight_tensor),
                  bce_logits_reference(logits, target, weight, pos_weight, reduction), tolerance);
    }
  }
  // Stable for logits far beyond exp's range: the loss is |x| where the sign is wrong, else ~0.
  const Tensor extreme = from_vector<double>({1000.0, -1000.0, -1000.0, 1000.0, 0.0});
  const Tensor labels = from_vector<double>({0.0, 1.0, 0.0, 1.0, 1.0});
  check_close(binary_cross_entropy_with_logits(extreme, labels, {}, Reduction::None),
              {1000.0, 1000.0, 0.0, 0.0, std::log(2.0)}, 1e-15);
}

TEST_CASE("gradients of the binary cross entropies match finite differences and sigmoid(x) - y at 0") {
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.0, 3.0});
  const Tensor pos_weight = from_vector<double>({1.0, 4.0, 0.5, 2.0});
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    gradcheck([&](const std::vector<Tensor>& t) { return binary_cross_entropy(t[0], t[1], weight, reduction); },
              {probabilities({3, 4}, 35), probabilities({3, 4}, 36)});
    gradcheck([&](const std::vector<Tensor>& t) {
      return binary_cross_entropy_with_logits(t[0], t[1], weight, reduction, pos_weight);
    }, {mul(random_tensor({3, 4}, 37), 3.0), probabilities({3, 4}, 38)});
  }
  // At x = 0 the gradient is sigmoid(0) (p y + 1 - y) - p y exactly, (x - |x|) / 2 splitting no tie.
  const Tensor zero_logits = zeros({4}, {.dtype = kFloat64}).requires_grad_();
  const Tensor target = from_vector<double>({0.0, 1.0, 0.25, 1.0});
  binary_cross_entropy_with_logits(zero_logits, target, {}, Reduction::Sum, pos_weight).backward();
  CHECK(values_of(zero_logits.grad()) == std::vector<double>{0.5, 0.5 * 4.0 - 4.0, 0.5 * 0.875 - 0.125, -1.0});
}

TEST_CASE("the binary cross entropies refuse PyTorch's bad arguments, naming the caller's line") {
  const Tensor input = probabilities({3}, 39);
  const std::string file = "test_losses_binary.cpp";
  int line = __LINE__ + 1;
  std::string message = error_of([&] { binary_cross_entropy(from_vector<double>({0.5, 1.5, 0.25}), input); });
  CHECK(message.find("binary_cross_entropy: all elements of input should be between 0 and 1, got values from 0.25 "
                     "to 1.5 (shape [3])") != std::string::npos);
  CHECK(names_line(message, file, line));
  CHECK(error_of([&] { binary_cross_entropy(input, from_vector<double>({0.5, -0.5, 0.25})); })
            .find("binary_cross_entropy: all elements of target should be between 0 and 1, got values from -0.5 "
                  "to 0.5") != std::string::npos);
  CHECK(error_of([&] { binary_cross_entropy(from_vector<double>({0.5, NAN, 0.25}), input); })
            .find("all elements of input should be between 0 and 1, got values from nan") != std::string::npos);
  line = __LINE__ + 1;
  message = error_of([&] { binary_cross_entropy(input, input.view({3, 1})); });
  CHECK(message.find("binary_cross_entropy: target shape [3, 1] must be the same as the input shape [3]") !=
        std::string::npos);
  CHECK(names_line(message, file, line));
  CHECK(error_of([&] { binary_cross_entropy_with_logits(input, input, ones({2, 3}, {.dtype = kFloat64})); })
            .find("binary_cross_entropy_with_logits: weight must be floating-point and broadcast to the input's "
                  "shape [3], got float64 of shape [2, 3]") != std::string::npos);
  CHECK(error_of([&] { binary_cross_entropy_with_logits(input, input, {}, Reduction::Mean, ones({4})); })
            .find("pos_weight must be floating-point and broadcast to the input's shape [3], got float32 of shape "
                  "[4]") != std::string::npos);
  CHECK(error_of([&] { binary_cross_entropy_with_logits(input, input, {}, Reduction::BatchMean); })
            .find("binary_cross_entropy_with_logits: reduction BatchMean is kl_div's only") != std::string::npos);
}

}  // namespace test_losses_binary
