// SequentialLR against float64 references of PyTorch 2.x's behaviour: each scheduler's closed form,
// restarted at epoch 0 on the base rates at its milestone; plus its state dict and refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace test_scheduler_sequential {

using namespace ember;

namespace {

void check_sequence(optim::SequentialLR& scheduler, optim::Optimizer& optimizer, int64_t last,
                    const std::function<double(int64_t)>& reference) {
  for (int64_t epoch = 0; epoch <= last; ++epoch) {
    if (epoch > 0) scheduler.step();
    CAPTURE(epoch);
    CHECK(scheduler.last_epoch() == epoch);
    CHECK(optimizer.get_lr(0) == doctest::Approx(reference(epoch)).epsilon(1e-12));
    CHECK(scheduler.get_last_lr() == std::vector<double>{optimizer.get_lr(0)});
  }
}

}  // namespace

TEST_CASE("SequentialLR runs a LinearLR warm-up, then an ExponentialLR from the base rate") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  optim::LinearLR warmup(optimizer, 0.1, 1.0, 4);
  optim::ExponentialLR decay(optimizer, 0.9);
  optim::SequentialLR scheduler(optimizer, {&warmup, &decay}, {4});
  check_sequence(scheduler, optimizer, 12, [](int64_t epoch) {
    if (epoch < 4) return 0.1 + 0.9 * static_cast<double>(epoch) / 4.0;
    return std::pow(0.9, static_cast<double>(epoch - 4));
  });
  CHECK(warmup.last_epoch() == 3);  // never stepped past its milestone
  CHECK(decay.last_epoch() == 8);
}

TEST_CASE("SequentialLR with three schedulers restarts each at its milestone") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.8});
  optim::ConstantLR constant(optimizer, 0.25, 100);
  optim::CosineAnnealingLR cosine(optimizer, 4);
  optim::PolynomialLR polynomial(optimizer, 5, 1.0);
  optim::SequentialLR scheduler(optimizer, {&constant, &cosine, &polynomial}, {2, 7});
  check_sequence(scheduler, optimizer, 15, [](int64_t epoch) {
    if (epoch < 2) return 0.8 * 0.25;
    if (epoch < 7) return 0.8 * (1.0 + std::cos(std::numbers::pi * static_cast<double>(epoch - 2) / 4.0)) / 2.0;
    return 0.8 * (1.0 - static_cast<double>(std::min<int64_t>(epoch - 7, 5)) / 5.0);
  });
}

TEST_CASE("SequentialLR state dict round trip continues across a milestone") {
  auto make_optimizer = [](Tensor& param) { return optim::SGD({param}, {.lr = 0.5}); };
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer = make_optimizer(param);
  optim::ConstantLR constant(optimizer, 0.5, 10);
  optim::StepLR step_lr(optimizer, 2, 0.5);
  optim::SequentialLR scheduler(optimizer, {&constant, &step_lr}, {3});
  scheduler.step();
  scheduler.step();
  const OrderedDict<double> state = scheduler.state_dict();
  CHECK(state["last_epoch"] == 2.0);
  CHECK(state["1.last_epoch"] == -1.0);  // undone at construction, as in PyTorch

  Tensor other = zeros({1}).requires_grad_();
  optim::SGD other_optimizer = make_optimizer(other);
  optim::ConstantLR other_constant(other_optimizer, 0.5, 10);
  optim::StepLR other_step(other_optimizer, 2, 0.5);
  optim::SequentialLR loaded(other_optimizer, {&other_constant, &other_step}, {3});
  loaded.load_state_dict(state);
  other_optimizer.set_lr(0, optimizer.get_lr(0));
  for (int i = 0; i < 6; ++i) {
    scheduler.step();
    loaded.step();
    CHECK(other_optimizer.get_lr(0) == optimizer.get_lr(0));
  }
  CHECK(optimizer.get_lr(0) == doctest::Approx(0.5 * 0.25).epsilon(1e-15));  // epoch 8: StepLR's epoch 5

  OrderedDict<double> broken = state;
  broken["last_epoch"] = 2.5;
  CHECK_THROWS_WITH_AS(loaded.load_state_dict(broken),
                       doctest::Contains("SequentialLR.load_state_dict: 'last_epoch' must be a whole number"), Error);
  CHECK(loaded.last_epoch() == 8);
}

TEST_CASE("SequentialLR refuses mismatched milestones and schedulers of another optimizer") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.5});
  optim::ExponentialLR first(optimizer, 0.9);
  optim::ExponentialLR second(optimizer, 0.8);
  CHECK_THROWS_WITH_AS(optim::SequentialLR(optimizer, {&first, &second}, {}),
                       doctest::Contains("SequentialLR: expects one milestone fewer than schedulers, got 2 schedulers "
                                         "and 0 milestones"),
                       Error);
  optim::ExponentialLR third(optimizer, 0.7);
  CHECK_THROWS_WITH_AS(optim::SequentialLR(optimizer, {&first, &second, &third}, {5, 2}),
                       doctest::Contains("SequentialLR: milestones must be sorted, got 5, 2"), Error);
  CHECK_THROWS_WITH_AS(optim::SequentialLR(optimizer, {}, {}),
                       doctest::Contains("SequentialLR: expects at least one scheduler, got none"), Error);
  Tensor other = zeros({1}).requires_grad_();
  optim::SGD fresh({other}, {.lr = 0.5});
  CHECK_THROWS_WITH_AS(optim::SequentialLR(fresh, {&first}, {}),
                       doctest::Contains("SequentialLR: parameter group 0 has no initial_lr"), Error);
}

}  // namespace test_scheduler_sequential
