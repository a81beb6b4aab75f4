// ConstantLR, PolynomialLR, MultiplicativeLR and CosineAnnealingWarmRestarts against float64
// references of PyTorch 2.x's closed forms written here (the schedulers use PyTorch's recursive
// forms, so the two agree to rounding), over every phase, plus their settings' refusals.
// OneCycleLR is in test_scheduler_one_cycle.cpp, ReduceLROnPlateau in test_scheduler_plateau.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <vector>

#include "runtime/ember.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace test_schedulers_more {

using namespace ember;

namespace {

// Steps `scheduler` through epochs 0 .. last and compares the rate of group 0 (base rate `base`)
// with reference(epoch), also checking that the optimizer holds what get_last_lr() reports.
void check_against(optim::LRScheduler& scheduler, optim::Optimizer& optimizer, int64_t last,
                   const std::function<double(int64_t)>& reference) {
  for (int64_t epoch = 0; epoch <= last; ++epoch) {
    if (epoch > 0) scheduler.step();
    CAPTURE(epoch);
    REQUIRE(scheduler.last_epoch() == epoch);
    CHECK(scheduler.get_last_lr()[0] == doctest::Approx(reference(epoch)).epsilon(1e-12));
    CHECK(optimizer.get_lr(0) == scheduler.get_last_lr()[0]);
  }
}

}  // namespace

TEST_CASE("ConstantLR scales the rate until total_iters, then restores it") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.3});
  optim::ConstantLR scheduler(optimizer, 0.25, 4);
  check_against(scheduler, optimizer, 9, [](int64_t epoch) { return 0.3 * (epoch < 4 ? 0.25 : 1.0); });
}

TEST_CASE("ConstantLR defaults and its refusals") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.9});
  {
    optim::ConstantLR scheduler(optimizer);  // factor 1/3 for 5 epochs
    CHECK(optimizer.get_lr(0) == doctest::Approx(0.3).epsilon(1e-15));
    for (int i = 0; i < 5; ++i) scheduler.step();
    CHECK(optimizer.get_lr(0) == doctest::Approx(0.9).epsilon(1e-15));
  }
  optimizer.set_lr(0, 0.9);
  CHECK_THROWS_WITH_AS(optim::ConstantLR(optimizer, 1.5),
                       doctest::Contains("ConstantLR: factor must be in [0, 1], got 1.5"), Error);
  CHECK_THROWS_WITH_AS(optim::ConstantLR(optimizer, -0.1), doctest::Contains("ConstantLR: factor must be in [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(optim::ConstantLR(optimizer, 0.5, -1),
                       doctest::Contains("ConstantLR: total_iters must be non-negative, got -1"), Error);
  // A factor 0 is taken, but dividing it back out at total_iters is Python's ZeroDivisionError.
  optim::ConstantLR zero(optimizer, 0.0, 2);
  CHECK(optimizer.get_lr(0) == 0.0);
  zero.step();
  CHECK_THROWS_WITH_AS(zero.step(), doctest::Contains("ConstantLR.step: epoch 2 divides the factor 0 back out"), Error);
  CHECK(zero.last_epoch() == 1);
}

TEST_CASE("PolynomialLR decays to zero over total_iters for several powers") {
  for (double power : {1.0, 2.0, 0.5, 3.7}) {
    CAPTURE(power);
    Tensor param = zeros({1}).requires_grad_();
    optim::SGD optimizer({param}, {.lr = 0.2});
    optim::PolynomialLR scheduler(optimizer, 6, power);
    check_against(scheduler, optimizer, 10, [&](int64_t epoch) {
      const double done = static_cast<double>(std::min<int64_t>(epoch, 6)) / 6.0;
      return 0.2 * std::pow(1.0 - done, power);
    });
    CHECK(optimizer.get_lr(0) == 0.0);  // 0^power at total_iters, exactly
  }
}

TEST_CASE("PolynomialLR refuses a negative total_iters or power") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.2});
  CHECK_THROWS_WITH_AS(optim::PolynomialLR(optimizer, -2),
                       doctest::Contains("PolynomialLR: total_iters must be non-negative, got -2"), Error);
  CHECK_THROWS_WITH_AS(optim::PolynomialLR(optimizer, 5, -1.0),
                       doctest::Contains("PolynomialLR: power must be finite and non-negative, got -1"), Error);
  CHECK_THROWS_WITH_AS(optim::PolynomialLR(optimizer, 5, NAN), doctest::Contains("PolynomialLR: power must be finite"),
                       Error);
  CHECK(optimizer.get_lr(0) == 0.2);
}

TEST_CASE("MultiplicativeLR multiplies the current rate by each group's lambda") {
  Tensor first = zeros({1}).requires_grad_();
  Tensor second = zeros({1}).requires_grad_();
  optim::SGD optimizer({first}, {.lr = 0.1});
  optimizer.add_param_group({second}, optim::SGDOptions{.lr = 2.0});
  auto first_lambda = [](int64_t epoch) { return 0.9; };
  auto second_lambda = [](int64_t epoch) { return 1.0 / static_cast<double>(epoch + 1); };
  int64_t calls_at_zero = 0;
  optim::MultiplicativeLR scheduler(optimizer,
                                    std::vector<optim::MultiplicativeLR::Lambda>{first_lambda, [&](int64_t epoch) {
                                                                                   calls_at_zero += epoch == 0;
                                                                                   return second_lambda(epoch);
                                                                                 }});
  CHECK(calls_at_zero == 0);  // PyTorch does not call the lambdas at construction
  double first_expected = 0.1;
  double second_expected = 2.0;
  for (int64_t epoch = 0; epoch <= 8; ++epoch) {
    if (epoch > 0) {
      scheduler.step();
      first_expected = 0.1 * std::pow(0.9, static_cast<double>(epoch));
      second_expected = 2.0 / std::tgamma(static_cast<double>(epoch + 2));  // 2 / (epoch + 1)!
    }
    CAPTURE(epoch);
    CHECK(optimizer.get_lr(0) == doctest::Approx(first_expected).epsilon(1e-12));
    CHECK(optimizer.get_lr(1) == doctest::Approx(second_expected).epsilon(1e-12));
  }
  CHECK_THROWS_WITH_AS(optim::MultiplicativeLR(optimizer, std::vector<optim::MultiplicativeLR::Lambda>{first_lambda}),
                       doctest::Contains("MultiplicativeLR: got 1 lambdas for 2 parameter groups"), Error);
  CHECK_THROWS_WITH_AS(optim::MultiplicativeLR(optimizer, optim::MultiplicativeLR::Lambda{}),
                       doctest::Contains("MultiplicativeLR: a lambda is empty"), Error);
}

TEST_CASE("CosineAnnealingWarmRestarts restarts after T_0, T_0 * T_mult, ... epochs") {
  for (int64_t T_mult : {int64_t{1}, int64_t{2}, int64_t{3}}) {
    for (double eta_min : {0.0, 0.01}) {
      CAPTURE(T_mult);
      CAPTURE(eta_min);
      Tensor param = zeros({1}).requires_grad_();
      optim::SGD optimizer({param}, {.lr = 0.5});
      optim::CosineAnnealingWarmRestarts scheduler(optimizer, 3, T_mult, eta_min);
      // The reference lists the restart epochs explicitly: 0, 3, 3 + 3 * T_mult, ...
      auto reference = [&](int64_t epoch) {
        int64_t start = 0;
        int64_t period = 3;
        while (epoch >= start + period) {
          start += period;
          period *= T_mult;
        }
        const double t = static_cast<double>(epoch - start) / static_cast<double>(period);
        return eta_min + (0.5 - eta_min) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
      };
      check_against(scheduler, optimizer, 45, reference);
    }
  }
}

TEST_CASE("CosineAnnealingWarmRestarts hits the base rate exactly at each restart and survives a state dict") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  optim::CosineAnnealingWarmRestarts scheduler(optimizer, 2, 2);
  for (int64_t epoch = 1; epoch <= 14; ++epoch) {
    scheduler.step();
    if (epoch == 2 || epoch == 6 || epoch == 14) CHECK(optimizer.get_lr(0) == 0.1);
  }
  // The period state follows from last_epoch: a fresh scheduler loaded with the state continues alike.
  Tensor other_param = zeros({1}).requires_grad_();
  optim::SGD other_optimizer({other_param}, {.lr = 0.1});
  optim::CosineAnnealingWarmRestarts loaded(other_optimizer, 2, 2);
  loaded.load_state_dict(scheduler.state_dict());
  other_optimizer.set_lr(0, optimizer.get_lr(0));
  for (int i = 0; i < 20; ++i) {
    scheduler.step();
    loaded.step();
    CHECK(other_optimizer.get_lr(0) == optimizer.get_lr(0));
  }
}

TEST_CASE("CosineAnnealingWarmRestarts refuses bad periods and eta_min") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  CHECK_THROWS_WITH_AS(optim::CosineAnnealingWarmRestarts(optimizer, 0),
                       doctest::Contains("CosineAnnealingWarmRestarts: T_0 must be a positive integer, got 0"), Error);
  CHECK_THROWS_WITH_AS(optim::CosineAnnealingWarmRestarts(optimizer, 5, 0),
                       doctest::Contains("CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got 0"), Error);
  CHECK_THROWS_WITH_AS(optim::CosineAnnealingWarmRestarts(optimizer, 5, 1, -0.5),
                       doctest::Contains("CosineAnnealingWarmRestarts: eta_min must be finite and non-negative"),
                       Error);
}

}  // namespace test_schedulers_more
