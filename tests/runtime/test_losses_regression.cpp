// l1_loss, smooth_l1_loss and huber_loss (composites, runtime/functional_losses_pointwise.cpp)
// against float64 loops for every reduction, with broadcasting and dtype promotion, gradients by
// finite differences, and PyTorch's argument errors naming the caller's line.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "numeric_check.h"

namespace test_losses_regression {

using namespace ember;
using namespace ember::testing;

namespace {

double smooth_l1_reference(double difference, double beta) {
  const double z = std::abs(difference);
  return z < beta ? 0.5 * z * z / beta : z - 0.5 * beta;
}

double huber_reference(double difference, double delta) {
  const double z = std::abs(difference);
  return z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta);
}

// A loss under test and its float64 reference of one difference x - y.
struct RegressionLoss {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&, Reduction)> loss;
  std::function<double(double)> reference;
};

std::vector<RegressionLoss> regression_losses() {
  std::vector<RegressionLoss> losses{
      {"l1_loss", [](const Tensor& x, const Tensor& y, Reduction r) { return l1_loss(x, y, r); },
       [](double d) { return std::abs(d); }}};
  for (double beta : {0.5, 1.0, 3.0})
    losses.push_back({"smooth_l1_loss",
                      [beta](const Tensor& x, const Tensor& y, Reduction r) { return smooth_l1_loss(x, y, r, beta); },
                      [beta](double d) { return smooth_l1_reference(d, beta); }});
  for (double delta : {0.5, 1.0, 3.0})
    losses.push_back({"huber_loss",
                      [delta](const Tensor& x, const Tensor& y, Reduction r) { return huber_loss(x, y, r, delta); },
                      [delta](double d) { return huber_reference(d, delta); }});
  return losses;
}

std::vector<double> reference(const RegressionLoss& loss, const Tensor& input, const Tensor& target,
                              Reduction reduction) {
  const std::vector<double> x = values_of(input), y = values_of(target);
  std::vector<double> losses;
  for (size_t i = 0; i < x.size(); ++i) losses.push_back(loss.reference(x[i] - y[i]));
  return reduced(losses, reduction);
}

}  // namespace

TEST_CASE("l1_loss, smooth_l1_loss and huber_loss match float64 loops for every reduction") {
  for (const RegressionLoss& loss : regression_losses()) {
    for (DType dtype : {kFloat64, kFloat32}) {
      const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
      // Differences from -4 to 4 reach both branches of every beta and delta; one input is transposed.
      const Tensor input = random_tensor({6, 5}, 11, dtype).t();
      const Tensor target = random_tensor({5, 6}, 12, dtype);
      for (Reduction reduction : kLossReductions) {
        INFO(loss.name << " " << dtype_name(dtype) << " reduction " << static_cast<int>(reduction));
        const Tensor result = loss.loss(input, target, reduction);
        CHECK(result.dtype() == dtype);
        CHECK(result.sizes() == (reduction == Reduction::None ? Dims{5, 6} : Dims{}));
        check_close(result, reference(loss, input, target, reduction), tolerance);
      }
    }
  }
}

TEST_CASE("the regression losses broadcast the target and promote float32 with float64, as PyTorch") {
  const Tensor input = random_tensor({3, 4}, 13, kFloat32);
  const Tensor row = random_tensor({4}, 14);
  const Tensor expanded = row.expand({3, 4}).contiguous();
  for (const RegressionLoss& loss : regression_losses()) {
    // PyTorch's huber_loss computes into empty_like(input), so its float32 input keeps float32
    // (test_losses_pytorch_parity.cpp); l1_loss and smooth_l1_loss promote.
    const bool into_input = std::string(loss.name) == "huber_loss";
    for (Reduction reduction : kLossReductions) {
      INFO(loss.name << " reduction " << static_cast<int>(reduction));
      const Tensor result = loss.loss(input, row, reduction);
      CHECK(result.dtype() == (into_input ? kFloat32 : kFloat64));
      check_close(result, reference(loss, input.to(kFloat64), expanded, reduction), into_input ? 1e-6 : 1e-13);
    }
  }
}

TEST_CASE("smooth_l1_loss with beta 0 is l1_loss, and empty inputs give nan for Mean and 0 for Sum") {
  const Tensor input = random_tensor({4, 3}, 15), target = random_tensor({4, 3}, 16);
  for (Reduction reduction : kLossReductions)
    check_close(smooth_l1_loss(input, target, reduction, 0.0), values_of(l1_loss(input, target, reduction)), 0.0);
  const Tensor empty_input = zeros({0, 3}, {.dtype = kFloat64});
  for (const RegressionLoss& loss : regression_losses()) {
    INFO(loss.name);
    CHECK(std::isnan(loss.loss(empty_input, empty_input, Reduction::Mean).item()));
    CHECK(loss.loss(empty_input, empty_input, Reduction::Sum).item() == 0.0);
    CHECK(loss.loss(empty_input, empty_input, Reduction::None).sizes() == Dims{0, 3});
  }
}

TEST_CASE("gradients of the regression losses match finite differences, for input and broadcast target") {
  for (const RegressionLoss& loss : regression_losses()) {
    for (Reduction reduction : kLossReductions) {
      INFO(loss.name << " reduction " << static_cast<int>(reduction));
      gradcheck([&](const std::vector<Tensor>& t) { return loss.loss(t[0], t[1], reduction); },
                {random_tensor({3, 4}, 17), random_tensor({4}, 18)});
    }
  }
}

TEST_CASE("an infinite difference gives the linear branch's finite gradient, not NaN") {
  // The unused quadratic branch squares the clamped distance, so no 0 * inf reaches the input.
  const Tensor target = from_vector<double>({0.0, 0.5});
  for (auto [name, expected] : {std::pair{"smooth_l1_loss", 0.25}, std::pair{"huber_loss", 0.5}}) {
    INFO(name);
    const Tensor input = from_vector<double>({INFINITY, 1.0}).requires_grad_();
    const Tensor loss = std::string(name) == "huber_loss" ? huber_loss(input, target, Reduction::Sum, 2.0)
                                                          : smooth_l1_loss(input, target, Reduction::Sum, 2.0);
    CHECK(std::isinf(loss.item()));
    loss.backward();
    // d/dx at x = inf: 1 (smooth_l1) or delta (huber); at d = 0.5 below 2: d / beta or d.
    CHECK(values_of(input.grad()) == std::vector<double>{std::string(name) == "huber_loss" ? 2.0 : 1.0, expected});
  }
}

TEST_CASE("the regression losses refuse PyTorch's bad arguments, naming the caller's line") {
  const Tensor x = random_tensor({3}, 19), y = random_tensor({4}, 20);
  const std::string file = "test_losses_regression.cpp";
  int line = __LINE__ + 1;
  std::string message = error_of([&] { smooth_l1_loss(x, x, Reduction::Mean, -1.0); });
  CHECK(message.find("smooth_l1_loss: beta must be non-negative, got -1") != std::string::npos);
  CHECK(names_line(message, file, line));
  line = __LINE__ + 1;
  message = error_of([&] { huber_loss(x, x, Reduction::Mean, 0.0); });
  CHECK(message.find("huber_loss: delta must be positive, got 0") != std::string::npos);
  CHECK(names_line(message, file, line));
  line = __LINE__ + 1;
  message = error_of([&] { l1_loss(x, y); });
  CHECK(message.find("l1_loss: shapes [3] and [4] cannot be broadcast") != std::string::npos);
  CHECK(names_line(message, file, line));
  message = error_of([&] { l1_loss(x.to(kInt64), x.to(kFloat32)); });
  CHECK(message.find("l1_loss: expected a floating-point input and a floating-point or integer target, got int64 "
                     "and float32") != std::string::npos);
  message = error_of([&] { huber_loss(x, x.to(kInt64)); });  // its backward would refuse the mix in PyTorch
  CHECK(message.find("huber_loss: expected floating-point input and target, got float64 and int64") !=
        std::string::npos);
  message = error_of([&] { huber_loss(x, x, Reduction::BatchMean); });
  CHECK(message.find("huber_loss: reduction BatchMean is kl_div's only; use None, Mean or Sum") !=
        std::string::npos);
  message = error_of([&] { smooth_l1_loss(x, x, static_cast<Reduction>(7)); });
  CHECK(message.find("smooth_l1_loss: reduction must be None (0), Mean (1) or Sum (2), got 7") !=
        std::string::npos);
  CHECK(error_of([&] { huber_loss(x, x, Reduction::Mean, NAN); }).find("delta must be positive, got nan") !=
        std::string::npos);
}

TEST_CASE("autocast: l1_loss, smooth_l1_loss and huber_loss compute in float32, as on PyTorch's fp32 list") {
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&, const Tensor&)>>> losses{
      {"l1_loss", [](const Tensor& x, const Tensor& y) { return l1_loss(x, y); }},
      {"smooth_l1_loss", [](const Tensor& x, const Tensor& y) { return smooth_l1_loss(x, y, Reduction::Sum, 0.7); }},
      {"huber_loss", [](const Tensor& x, const Tensor& y) { return huber_loss(x, y, Reduction::None, 1.3); }},
  };
  for (const DType dtype : {kBFloat16, kFloat16}) {
    for (const auto& [name, loss] : losses) {
      INFO(name, " under ", dtype_name(dtype));
      const Tensor input = from_vector<float>({0.1f, -2.3f, 5.7f, 1.9f}).to(dtype).requires_grad_();
      const Tensor target = from_vector<float>({0.3f, 1.1f, 5.6f, -0.7f}).to(dtype);
      const Tensor by_hand = loss(input.detach().to(kFloat32), target.to(kFloat32));
      Tensor result;
      {
        const AutocastGuard autocast(dtype);
        result = loss(input, target);
      }
      CHECK(result.dtype() == kFloat32);
      CHECK(result.to_vector<float>() == by_hand.to_vector<float>());
      sum(result).backward();
      CHECK(input.grad().dtype() == dtype);
    }
  }
}

}  // namespace test_losses_regression
