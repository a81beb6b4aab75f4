// kl_div (a composite, runtime/functional_losses_pointwise.cpp): PyTorch's xlogy(y, y) - y x and
// exp(y) (y - x) against float64 loops for None, Mean, Sum and BatchMean, zero targets, empty and
// 0-d inputs, gradients by finite differences and the argument errors.
#include <doctest/doctest.h>

#include <cmath>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "loss_reference.h"
#include "numeric_check.h"

namespace test_losses_kl_div {

using namespace ember;
using namespace ember::testing;

namespace {

std::vector<double> kl_div_reference(const Tensor& input, const Tensor& target, Reduction reduction,
                                     bool log_target) {
  const std::vector<double> x = values_of(input), y = values_of(target);
  std::vector<double> losses;
  for (size_t i = 0; i < x.size(); ++i) {
    if (log_target) {
      losses.push_back(std::exp(y[i]) * (y[i] - x[i]));
    } else {
      losses.push_back((y[i] == 0.0 ? 0.0 : y[i] * std::log(y[i])) - y[i] * x[i]);
    }
  }
  if (reduction != Reduction::BatchMean) return reduced(losses, reduction);
  return {reduced(losses, Reduction::Sum)[0] / static_cast<double>(input.sizes()[0])};
}

constexpr Reduction kAllReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum, Reduction::BatchMean};

// Log-probabilities [4, 5] and a probability target with two zeros.
Tensor log_probabilities(uint32_t seed, DType dtype = kFloat64) {
  return from_vector<double>(reference_softmax(random_tensor({4, 5}, seed), 1, true), {4, 5}, {.dtype = dtype});
}

Tensor target_with_zeros(uint32_t seed, DType dtype = kFloat64) {
  std::vector<double> values = reference_softmax(random_tensor({4, 5}, seed), 1, false);
  values[3] = 0.0;
  values[12] = 0.0;
  return from_vector<double>(values, {4, 5}, {.dtype = dtype});
}

}  // namespace

TEST_CASE("kl_div matches float64 loops for every reduction, BatchMean included, with zero targets") {
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    const Tensor input = log_probabilities(40, dtype);
    const Tensor target = target_with_zeros(41, dtype);
    const Tensor log_target = log_probabilities(42, dtype);
    for (Reduction reduction : kAllReductions) {
      INFO(dtype_name(dtype) << " reduction " << static_cast<int>(reduction));
      const Tensor result = kl_div(input, target, reduction);
      CHECK(result.dtype() == dtype);
      check_close(result, kl_div_reference(input, target, reduction, false), tolerance);
      check_close(kl_div(input, log_target, reduction, true), kl_div_reference(input, log_target, reduction, true),
                  tolerance);
    }
  }
  // As PyTorch's xlogy(y, y) - y x: a zero target against an input of -inf gives 0 - 0 * -inf = nan.
  const Tensor infinite = from_vector<double>({-INFINITY, std::log(0.5)});
  check_close(kl_div(infinite, from_vector<double>({0.0, 0.5}), Reduction::None), {NAN, 0.0}, 1e-15);
}

TEST_CASE("kl_div on empty and 0-d inputs: BatchMean of a 0-d input is its sum, of no rows nan") {
  const Tensor empty_input = zeros({0, 5}, {.dtype = kFloat64});
  CHECK(std::isnan(kl_div(empty_input, empty_input, Reduction::BatchMean).item()));
  CHECK(std::isnan(kl_div(empty_input, empty_input, Reduction::Mean).item()));
  CHECK(kl_div(empty_input, empty_input, Reduction::Sum).item() == 0.0);
  const Tensor x = scalar_tensor(-0.5, {.dtype = kFloat64}), y = scalar_tensor(0.25, {.dtype = kFloat64});
  const double expected = 0.25 * std::log(0.25) + 0.25 * 0.5;
  CHECK(kl_div(x, y, Reduction::BatchMean).item() == doctest::Approx(expected).epsilon(1e-15));
  CHECK(kl_div(x, y, Reduction::BatchMean).dim() == 0);
}

TEST_CASE("gradients of kl_div match finite differences for input and target") {
  for (Reduction reduction : kAllReductions) {
    for (bool log_target : {false, true}) {
      INFO("reduction " << static_cast<int>(reduction) << " log_target " << log_target);
      // Positive targets: at y = 0 the target's derivative has no finite difference (y log y).
      const Tensor target = log_target ? log_probabilities(43) : exp(log_probabilities(44));
      gradcheck([&](const std::vector<Tensor>& t) { return kl_div(t[0], t[1], reduction, log_target); },
                {log_probabilities(45), target});
    }
  }
  // The input's gradient is -y, so 0 (not NaN) where the target is 0.
  const Tensor input = log_probabilities(46).requires_grad_();
  const Tensor target = target_with_zeros(47);
  kl_div(input, target, Reduction::Sum).backward();
  check_close(input.grad(), values_of(neg(target)), 0.0);
}

TEST_CASE("kl_div refuses bad arguments, naming the caller's line") {
  const Tensor x = log_probabilities(48);
  const std::string file = "test_losses_kl_div.cpp";
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { kl_div(x, zeros({3}, {.dtype = kFloat64})); });
  CHECK(message.find("kl_div: shapes [4, 5] and [3] cannot be broadcast") != std::string::npos);
  CHECK(names_line(message, file, line));
  // An integer target computes as floating (test_losses_pytorch_parity.cpp); bool is refused.
  CHECK(error_of([&] { kl_div(x, x.to(kBool)); })
            .find("kl_div: expected a floating-point input and a floating-point or integer target, got float64 and "
                  "bool") != std::string::npos);
  CHECK(error_of([&] { kl_div(x, x, static_cast<Reduction>(-1)); })
            .find("kl_div: reduction must be None (0), Mean (1), Sum (2) or BatchMean (3), got -1") !=
        std::string::npos);
}

}  // namespace test_losses_kl_div
