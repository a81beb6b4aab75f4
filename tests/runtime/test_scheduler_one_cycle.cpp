// OneCycleLR against a float64 reference of PyTorch 2.x's 1cycle policy written here (phase ends at
// pct_start * total - 1, 2 * pct_start * total - 2 and total - 1, cosine or linear interpolation
// between the initial, max and min rates), over every phase and the extra step PyTorch allows.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace test_scheduler_one_cycle {

using namespace ember;

namespace {

// The rate at `step` for one group, from the policy's description rather than its phase table.
double one_cycle_reference(int64_t step, double max_lr, const optim::OneCycleOptions& o, int64_t total) {
  const double initial = max_lr / o.div_factor;
  const double lowest = initial / o.final_div_factor;
  const double peak = o.pct_start * static_cast<double>(total) - 1.0;
  const double s = static_cast<double>(step);
  auto between = [&](double from, double to, double begin, double end) {
    const double w = (s - begin) / (end - begin);
    if (o.anneal_strategy == "linear") return from + (to - from) * w;
    return to + (from - to) * (1.0 + std::cos(std::numbers::pi * w)) / 2.0;
  };
  if (s <= peak) return between(initial, max_lr, 0.0, peak);
  if (!o.three_phase) return between(max_lr, lowest, peak, static_cast<double>(total) - 1.0);
  const double back = 2.0 * o.pct_start * static_cast<double>(total) - 2.0;
  if (s <= back) return between(max_lr, initial, peak, back);
  return between(initial, lowest, back, static_cast<double>(total) - 1.0);
}

}  // namespace

TEST_CASE("OneCycleLR follows the 1cycle policy in two and three phases, cosine and linear") {
  for (bool three_phase : {false, true}) {
    for (std::string strategy : {"cos", "linear"}) {
      CAPTURE(three_phase);
      CAPTURE(strategy);
      Tensor first = zeros({1}).requires_grad_();
      Tensor second = zeros({1}).requires_grad_();
      optim::Adam optimizer({first}, {.lr = 1e-3});
      optimizer.add_param_group({second}, optim::AdamOptions{.lr = 1e-3});
      const optim::OneCycleOptions options{
          .total_steps = 23, .pct_start = 0.25, .anneal_strategy = strategy, .three_phase = three_phase};
      optim::OneCycleLR scheduler(optimizer, {0.4, 2.0}, options);
      // PyTorch allows step 23 == total_steps, extrapolating the last phase: the cosine turns back
      // up, the line goes below zero, which ember's optimizers refuse (PyTorch would set it).
      const int64_t last = strategy == "cos" ? 23 : 22;
      for (int64_t step = 0; step <= last; ++step) {
        if (step > 0) scheduler.step();
        CAPTURE(step);
        CHECK(optimizer.get_lr(0) == doctest::Approx(one_cycle_reference(step, 0.4, options, 23)).epsilon(1e-12));
        CHECK(optimizer.get_lr(1) == doctest::Approx(one_cycle_reference(step, 2.0, options, 23)).epsilon(1e-12));
      }
      if (strategy == "linear") {
        CHECK_THROWS_WITH_AS(scheduler.step(),
                             doctest::Contains("OneCycleLR.step: epoch 23 gives parameter group 0 the learning rate -"),
                             Error);
        CHECK(scheduler.last_epoch() == 22);
        continue;
      }
      CHECK(scheduler.last_epoch() == 23);
      CHECK_THROWS_WITH_AS(
          scheduler.step(),
          doctest::Contains("OneCycleLR.step: tried to step 24 times; the specified number of total steps is 23"),
          Error);
      CHECK(scheduler.last_epoch() == 23);
    }
  }
}

TEST_CASE("OneCycleLR reaches max_lr at the peak and the minimum at the last step") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.5});
  // 0.5 * 10 - 1 = 4: step 4 is the peak, 9 the end.
  optim::OneCycleLR scheduler(optimizer, {1.0},
                              {.total_steps = 10, .pct_start = 0.5, .div_factor = 10.0, .final_div_factor = 100.0});
  CHECK(optimizer.get_lr(0) == doctest::Approx(0.1).epsilon(1e-15));
  for (int i = 0; i < 4; ++i) scheduler.step();
  CHECK(optimizer.get_lr(0) == doctest::Approx(1.0).epsilon(1e-15));
  for (int i = 0; i < 5; ++i) scheduler.step();
  CHECK(optimizer.get_lr(0) == doctest::Approx(0.001).epsilon(1e-15));
}

TEST_CASE("OneCycleLR takes epochs times steps_per_epoch and overwrites initial_lr") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  optim::StepLR earlier(optimizer, 3);  // records initial_lr 0.1
  REQUIRE(optimizer.initial_lr(0) == 0.1);
  optim::OneCycleLR scheduler(optimizer, {0.5}, {.epochs = 4, .steps_per_epoch = 5});
  CHECK(scheduler.total_steps() == 20);
  CHECK(optimizer.initial_lr(0) == 0.5 / 25.0);  // PyTorch assigns it, no setdefault
  CHECK(scheduler.base_lrs() == std::vector<double>{0.5 / 25.0});
  const optim::OneCycleOptions options{.total_steps = 20};
  for (int64_t step = 1; step <= 20; ++step) {
    scheduler.step();
    CAPTURE(step);
    CHECK(optimizer.get_lr(0) == doctest::Approx(one_cycle_reference(step, 0.5, options, 20)).epsilon(1e-12));
  }
}

TEST_CASE("OneCycleLR state dict round trip continues the cycle") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  optim::OneCycleLR scheduler(optimizer, {0.3}, {.total_steps = 15});
  for (int i = 0; i < 6; ++i) scheduler.step();
  Tensor other_param = zeros({1}).requires_grad_();
  optim::SGD other_optimizer({other_param}, {.lr = 0.1});
  optim::OneCycleLR loaded(other_optimizer, {0.3}, {.total_steps = 15});
  loaded.load_state_dict(scheduler.state_dict());
  CHECK(loaded.last_epoch() == 6);
  for (int i = 0; i < 9; ++i) {
    scheduler.step();
    loaded.step();
    CHECK(other_optimizer.get_lr(0) == optimizer.get_lr(0));
  }
  CHECK_THROWS_WITH_AS(loaded.step(), doctest::Contains("OneCycleLR.step: tried to step 16 times"), Error);
}

TEST_CASE("OneCycleLR refuses bad settings before changing the optimizer") {
  Tensor first = zeros({1}).requires_grad_();
  Tensor second = zeros({1}).requires_grad_();
  optim::SGD optimizer({first}, {.lr = 0.1});
  optimizer.add_param_group({second}, optim::SGDOptions{.lr = 0.2});
  auto refused = [&](std::vector<double> max_lr, optim::OneCycleOptions options, const char* message) {
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(optim::OneCycleLR(optimizer, max_lr, options), doctest::Contains(message), Error);
    CHECK_FALSE(optimizer.initial_lr(0).has_value());
    CHECK(optimizer.get_lr(0) == 0.1);
  };
  refused({1.0}, {}, "OneCycleLR: give either total_steps or both epochs and steps_per_epoch");
  refused({1.0}, {.epochs = 3}, "OneCycleLR: give either total_steps or both epochs and steps_per_epoch");
  refused({1.0}, {.total_steps = 0}, "OneCycleLR: total_steps must be a positive integer, got 0");
  refused({1.0}, {.epochs = -1, .steps_per_epoch = 2}, "OneCycleLR: epochs must be a positive integer, got -1");
  refused({1.0}, {.epochs = 2, .steps_per_epoch = 0}, "OneCycleLR: steps_per_epoch must be a positive integer, got 0");
  refused({1.0}, {.total_steps = 10, .pct_start = 1.5}, "OneCycleLR: pct_start must be in [0, 1], got 1.5");
  refused({1.0}, {.total_steps = 10, .anneal_strategy = "exp"},
          "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got 'exp'");
  refused({1.0}, {.total_steps = 10, .div_factor = 0.0}, "OneCycleLR: div_factor must be positive and finite, got 0");
  refused({1.0}, {.total_steps = 10, .final_div_factor = -1.0},
          "OneCycleLR: final_div_factor must be positive and finite, got -1");
  refused({1.0, 2.0, 3.0}, {.total_steps = 10},
          "OneCycleLR: expected 2 max_lr values (one per parameter group) or one, got 3");
  refused({1.0, NAN}, {.total_steps = 10}, "OneCycleLR: max_lr of parameter group 1 must be finite and non-negative");
  // 0.1 * 10 - 1 = 0: the warm-up ends where it begins, Python's ZeroDivisionError at step 0.
  refused({1.0}, {.total_steps = 10, .pct_start = 0.1}, "OneCycleLR: phase 0 ends at step 0, where it begins");
}

}  // namespace test_scheduler_one_cycle
