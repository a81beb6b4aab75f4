// What an LR scheduler refuses, and that a refused construction or step changes nothing: a rate the
// optimizer would refuse (negative or NaN) is caught for every group before the epoch advances or
// any group changes, and settings that can only lead to one are refused at construction.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_scheduler_refusals {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("a scheduler step whose rate the optimizer refuses changes nothing and names scheduler, group, epoch") {
  Tensor first = zeros({1}).requires_grad_();
  Tensor second = zeros({1}).requires_grad_();
  optim::SGD optimizer({first}, {.lr = 0.1});
  optimizer.add_param_group({second}, optim::SGDOptions{.lr = 1.0});
  // Group 1's factor turns negative at epoch 2 (1 - 0.6 * 2), group 0's only at epoch 4.
  optim::LambdaLR scheduler(optimizer, std::vector<optim::LambdaLR::Lambda>{
                                           [](int64_t epoch) { return 1.0 - 0.3 * static_cast<double>(epoch); },
                                           [](int64_t epoch) { return 1.0 - 0.6 * static_cast<double>(epoch); }});
  scheduler.step();
  const std::vector<double> epoch_one{0.1 * (1.0 - 0.3), 1.0 * (1.0 - 0.6)};
  REQUIRE(scheduler.get_last_lr() == epoch_one);
  const OrderedDict<double> state_before = scheduler.state_dict();
  for (int attempt = 0; attempt < 2; ++attempt) {  // a retry meets the same epoch, not the next
    CAPTURE(attempt);
    const int line = __LINE__ + 1;
    const std::string message = error_of([&] { scheduler.step(); });
    CHECK(message.find("LambdaLR.step: epoch 2 gives parameter group 1 the learning rate -0.19999999999999996, "
                       "which the optimizer refuses") != std::string::npos);
    CHECK(names_line(message, line));
    CHECK(scheduler.last_epoch() == 1);
    CHECK(scheduler.get_last_lr() == epoch_one);
    CHECK(scheduler.state_dict().values() == state_before.values());
    CHECK(optimizer.get_lr(0) == epoch_one[0]);  // group 0's valid rate was not written either
    CHECK(optimizer.get_lr(1) == epoch_one[1]);
  }
}

TEST_CASE("a scheduler whose first rate the optimizer refuses is not made and leaves the optimizer alone") {
  Tensor param = zeros({1}).requires_grad_();
  optim::Adam optimizer({param}, {.lr = 0.01});
  CHECK_THROWS_WITH_AS(optim::LambdaLR(optimizer, [](int64_t) { return NAN; }),
                       doctest::Contains("LambdaLR: epoch 0 gives parameter group 0 the learning rate nan"), Error);
  CHECK_FALSE(optimizer.initial_lr(0).has_value());  // no initial_lr recorded for a scheduler that was never made
  CHECK(optimizer.get_lr(0) == 0.01);
  // A group whose rate is infinite (set_lr allows it) has no finite base for a schedule.
  optimizer.set_lr(0, INFINITY);
  CHECK_THROWS_WITH_AS(optim::StepLR(optimizer, 2),
                       doctest::Contains("StepLR: parameter group 0 has the learning rate inf; a schedule needs a "
                                         "finite base rate"),
                       Error);
  CHECK_FALSE(optimizer.initial_lr(0).has_value());
}

TEST_CASE("scheduler settings that can only give refused rates are refused at construction") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  for (double gamma : {-1.0, static_cast<double>(NAN)}) {
    CAPTURE(gamma);
    const std::string message = error_of([&] { optim::StepLR(optimizer, 3, gamma); });
    CHECK(message.find(fmt::format("StepLR: gamma must be non-negative, got {}", gamma)) != std::string::npos);
  }
  for (double eta_min : {-0.1, static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
    CAPTURE(eta_min);
    const std::string message = error_of([&] { optim::CosineAnnealingLR(optimizer, 2, eta_min); });
    CHECK(message.find(fmt::format("CosineAnnealingLR: eta_min must be finite and non-negative, got {}", eta_min)) !=
          std::string::npos);
  }
  CHECK_FALSE(optimizer.initial_lr(0).has_value());
  CHECK(optimizer.get_lr(0) == 0.1);
  // gamma 0 and eta_min 0 give the rate 0, which is allowed.
  optim::StepLR to_zero(optimizer, 1, 0.0);
  to_zero.step();
  CHECK(optimizer.get_lr(0) == 0.0);
}

}  // namespace test_scheduler_refusals
