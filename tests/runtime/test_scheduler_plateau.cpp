// ReduceLROnPlateau against metric sequences whose outcome is worked out by hand from PyTorch 2.x's
// rules (each expected rate's reason is in a comment), plus its state dict and refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/ember.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace test_scheduler_plateau {

using namespace ember;

namespace {

// Feeds `metrics` one step each and checks group 0's rate after each.
void check_rates(optim::ReduceLROnPlateau& scheduler, optim::Optimizer& optimizer, const std::vector<double>& metrics,
                 const std::vector<double>& expected) {
  REQUIRE(metrics.size() == expected.size());
  for (size_t i = 0; i < metrics.size(); ++i) {
    scheduler.step(metrics[i]);
    CAPTURE(i);
    CHECK(optimizer.get_lr(0) == doctest::Approx(expected[i]).epsilon(1e-15));
    CHECK(scheduler.get_last_lr()[0] == optimizer.get_lr(0));
  }
}

}  // namespace

TEST_CASE("ReduceLROnPlateau in min mode with a relative threshold, patience and cooldown") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  optim::ReduceLROnPlateau scheduler(optimizer, {.factor = 0.5, .patience = 1, .threshold = 0.1, .cooldown = 1});
  CHECK(scheduler.best() == std::numeric_limits<double>::infinity());
  CHECK(scheduler.get_last_lr() == std::vector<double>{1.0});
  // 10: the first metric beats inf. 9.5, 9.2: not below 10 * 0.9 = 9, two bad epochs > patience 1:
  // halve, cooldown 1. 9.5: bad, but the cooldown zeroes the count. 9.5: one bad. 8.9 < 9: the new
  // best. 8.9, 8.9: not below 8.9 * 0.9, two bad: halve again.
  check_rates(scheduler, optimizer, {10.0, 9.5, 9.2, 9.5, 9.5, 8.9, 8.9, 8.9},
              {1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25});
  CHECK(scheduler.best() == 8.9);
  CHECK(scheduler.last_epoch() == 8);
  CHECK(scheduler.cooldown_counter() == 1);
  CHECK(scheduler.num_bad_epochs() == 0);
}

TEST_CASE("ReduceLROnPlateau in max mode with an absolute threshold stops at min_lr") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  optim::ReduceLROnPlateau scheduler(
      optimizer,
      {.mode = "max", .factor = 0.5, .patience = 0, .threshold = 0.5, .threshold_mode = "abs", .min_lr = {0.3}});
  // 1.0 beats -inf. 1.4 is not above 1.0 + 0.5: bad > patience 0, halve. 1.6 > 1.5: best. 1.6 again:
  // max(0.25, 0.3) = 0.3. NaN is never better: max(0.15, 0.3) = 0.3, no change.
  check_rates(scheduler, optimizer, {1.0, 1.4, 1.6, 1.6, NAN}, {1.0, 0.5, 0.5, 0.3, 0.3});
  CHECK(scheduler.best() == 1.6);
}

TEST_CASE("ReduceLROnPlateau relative threshold in max mode and abs in min mode") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.8});
  optim::ReduceLROnPlateau max_rel(optimizer, {.mode = "max", .factor = 0.5, .patience = 0, .threshold = 0.1});
  // 10 beats -inf; 10.5 is not above 10 * 1.1 = 11: halve; 11.5 > 11: best.
  check_rates(max_rel, optimizer, {10.0, 10.5, 11.5}, {0.8, 0.4, 0.4});
  Tensor other = zeros({1}).requires_grad_();
  optim::SGD other_optimizer({other}, {.lr = 0.8});
  optim::ReduceLROnPlateau min_abs(other_optimizer,
                                   {.factor = 0.5, .patience = 0, .threshold = 1.0, .threshold_mode = "abs"});
  // 5 beats inf; 4.5 is not below 5 - 1: halve; 3.9 < 4: best.
  check_rates(min_abs, other_optimizer, {5.0, 4.5, 3.9}, {0.8, 0.4, 0.4});
}

TEST_CASE("ReduceLROnPlateau skips a change smaller than eps and takes one min_lr per group") {
  Tensor first = zeros({1}).requires_grad_();
  Tensor second = zeros({1}).requires_grad_();
  optim::SGD optimizer({first}, {.lr = 1e-8});
  optimizer.add_param_group({second}, optim::SGDOptions{.lr = 1.0});
  optim::ReduceLROnPlateau scheduler(optimizer, {.patience = 0, .min_lr = {0.0, 0.05}});
  scheduler.step(1.0);
  scheduler.step(1.0);  // bad: group 0 would move by 9e-9 < eps 1e-8, so it stays; group 1 to 0.1
  CHECK(optimizer.get_lr(0) == 1e-8);
  CHECK(optimizer.get_lr(1) == doctest::Approx(0.1).epsilon(1e-15));
  scheduler.step(1.0);  // group 1: max(0.01, 0.05)
  CHECK(optimizer.get_lr(1) == 0.05);
  CHECK(scheduler.get_last_lr() == std::vector<double>{1e-8, 0.05});
}

TEST_CASE("ReduceLROnPlateau state dict round trip continues the counters") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  const optim::PlateauOptions options{.factor = 0.5, .patience = 2, .cooldown = 2};
  optim::ReduceLROnPlateau scheduler(optimizer, options);
  for (double metric : {3.0, 2.0, 2.5, 2.5}) scheduler.step(metric);
  const OrderedDict<double> state = scheduler.state_dict();
  CHECK(state.keys() ==
        std::vector<std::string>{"last_epoch", "best", "num_bad_epochs", "cooldown_counter", "last_lr.0"});
  CHECK(state["best"] == 2.0);
  CHECK(state["num_bad_epochs"] == 2.0);
  Tensor other = zeros({1}).requires_grad_();
  optim::SGD other_optimizer({other}, {.lr = 1.0});
  optim::ReduceLROnPlateau loaded(other_optimizer, options);
  loaded.load_state_dict(state);
  for (double metric : {2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 1.0}) {
    scheduler.step(metric);
    loaded.step(metric);
    CHECK(other_optimizer.get_lr(0) == optimizer.get_lr(0));
  }
  CHECK(optimizer.get_lr(0) == 0.25);  // reduced after 3 bad epochs, again after cooldown 2 + patience 2 + 1
  CHECK(loaded.state_dict().values() == scheduler.state_dict().values());

  OrderedDict<double> broken = state;
  broken["num_bad_epochs"] = 1.5;
  CHECK_THROWS_WITH_AS(loaded.load_state_dict(broken),
                       doctest::Contains("ReduceLROnPlateau.load_state_dict: 'num_bad_epochs' must be a whole number"),
                       Error);
  OrderedDict<double> nan_best = state;
  nan_best["best"] = NAN;
  CHECK_THROWS_WITH_AS(loaded.load_state_dict(nan_best),
                       doctest::Contains("ReduceLROnPlateau.load_state_dict: 'best' must not be NaN"), Error);
  OrderedDict<double> short_state;
  short_state.insert("last_epoch", 1.0);
  CHECK_THROWS_WITH_AS(loaded.load_state_dict(short_state),
                       doctest::Contains("ReduceLROnPlateau.load_state_dict: expected 5 entries"), Error);
}

TEST_CASE("ReduceLROnPlateau refuses bad settings and a group added later") {
  Tensor first = zeros({1}).requires_grad_();
  optim::SGD optimizer({first}, {.lr = 1.0});
  CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(optimizer, {.factor = 1.0}),
                       doctest::Contains("ReduceLROnPlateau: factor must be in [0, 1), got 1"), Error);
  CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(optimizer, {.mode = "median"}),
                       doctest::Contains("ReduceLROnPlateau: mode must be 'min' or 'max', got 'median'"), Error);
  CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(optimizer, {.threshold_mode = "pct"}),
                       doctest::Contains("ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got 'pct'"), Error);
  CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(optimizer, {.patience = -1}),
                       doctest::Contains("ReduceLROnPlateau: patience must be non-negative, got -1"), Error);
  CHECK_THROWS_WITH_AS(
      optim::ReduceLROnPlateau(optimizer, {.min_lr = {0.1, 0.2}}),
      doctest::Contains("ReduceLROnPlateau: expected 1 min_lrs (one per parameter group) or one, got 2"), Error);
  CHECK_THROWS_WITH_AS(
      optim::ReduceLROnPlateau(optimizer, {.min_lr = {-1.0}}),
      doctest::Contains("ReduceLROnPlateau: min_lr of parameter group 0 must be finite and non-negative"), Error);
  optim::ReduceLROnPlateau scheduler(optimizer);
  Tensor second = zeros({1}).requires_grad_();
  optimizer.add_param_group({second});
  CHECK_THROWS_WITH_AS(scheduler.step(1.0),
                       doctest::Contains("ReduceLROnPlateau.step: the optimizer has 2 parameter groups, the scheduler "
                                         "was made for 1"),
                       Error);
  CHECK(scheduler.last_epoch() == 0);
}

}  // namespace test_scheduler_plateau
