// ChainedScheduler against a float64 reference of the product of its schedulers' closed forms,
// its state dict (nested by index, loaded all or nothing) and its refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace test_scheduler_chained {

using namespace ember;

TEST_CASE("ChainedScheduler multiplies a ConstantLR warm-up with an ExponentialLR decay") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  optim::ConstantLR constant(optimizer, 0.1, 2);
  optim::ExponentialLR exponential(optimizer, 0.9);
  optim::ChainedScheduler chain(optimizer, {&constant, &exponential});
  for (int64_t epoch = 0; epoch <= 8; ++epoch) {
    if (epoch > 0) chain.step();
    CAPTURE(epoch);
    const double expected = (epoch < 2 ? 0.1 : 1.0) * std::pow(0.9, static_cast<double>(epoch));
    CHECK(optimizer.get_lr(0) == doctest::Approx(expected).epsilon(1e-12));
    CHECK(chain.get_last_lr() == std::vector<double>{optimizer.get_lr(0)});
    CHECK(constant.last_epoch() == epoch);
    CHECK(exponential.last_epoch() == epoch);
  }
}

TEST_CASE("ChainedScheduler state dict nests the schedulers' and loads all or nothing") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.5});
  optim::StepLR step_lr(optimizer, 2, 0.5);
  optim::PolynomialLR polynomial(optimizer, 6, 2.0);
  optim::ChainedScheduler chain(optimizer, {&step_lr, &polynomial});
  for (int i = 0; i < 3; ++i) chain.step();
  const OrderedDict<double> state = chain.state_dict();
  CHECK(state.keys() == std::vector<std::string>{"0.last_epoch", "0.step_count", "0.base_lrs.0", "0.last_lr.0",
                                                 "1.last_epoch", "1.step_count", "1.base_lrs.0", "1.last_lr.0"});

  Tensor other = zeros({1}).requires_grad_();
  optim::SGD other_optimizer({other}, {.lr = 0.5});
  optim::StepLR other_step(other_optimizer, 2, 0.5);
  optim::PolynomialLR other_polynomial(other_optimizer, 6, 2.0);
  optim::ChainedScheduler loaded(other_optimizer, {&other_step, &other_polynomial});
  loaded.load_state_dict(state);
  CHECK(loaded.get_last_lr() == chain.get_last_lr());
  other_optimizer.set_lr(0, optimizer.get_lr(0));  // the optimizer's state is loaded separately, as in PyTorch
  for (int i = 0; i < 5; ++i) {
    chain.step();
    loaded.step();
    CHECK(other_optimizer.get_lr(0) == optimizer.get_lr(0));
  }

  // The second part is refused: the first, already loaded, is put back.
  OrderedDict<double> broken = state;
  broken["1.last_epoch"] = -7.0;
  const OrderedDict<double> before = loaded.state_dict();
  CHECK_THROWS_WITH_AS(loaded.load_state_dict(broken),
                       doctest::Contains("PolynomialLR.load_state_dict: 'last_epoch' must be a whole number"), Error);
  CHECK(loaded.state_dict().values() == before.values());
  OrderedDict<double> stray = state;
  stray.insert("2.last_epoch", 1.0);
  CHECK_THROWS_WITH_AS(loaded.load_state_dict(stray),
                       doctest::Contains("ChainedScheduler.load_state_dict: key '2.last_epoch' names none of the 2 "
                                         "schedulers"),
                       Error);
  OrderedDict<double> unnumbered;
  unnumbered.insert("x.last_epoch", 1.0);
  CHECK_THROWS_WITH_AS(loaded.load_state_dict(unnumbered), doctest::Contains("key 'x.last_epoch' names none"), Error);
  CHECK(loaded.state_dict().values() == before.values());
}

TEST_CASE("ChainedScheduler refuses an empty or null list") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.5});
  CHECK_THROWS_WITH_AS(optim::ChainedScheduler(optimizer, {}),
                       doctest::Contains("ChainedScheduler: expects at least one scheduler, got none"), Error);
  optim::ExponentialLR exponential(optimizer, 0.9);
  CHECK_THROWS_WITH_AS(optim::ChainedScheduler(optimizer, {&exponential, nullptr}),
                       doctest::Contains("ChainedScheduler: scheduler 1 is null"), Error);
}

}  // namespace test_scheduler_chained
