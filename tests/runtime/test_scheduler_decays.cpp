// MultiStepLR and ExponentialLR against PyTorch 1.13's chainable get_lr(), bit for bit. The
// expected rates were printed by python3 running those get_lr() recursions (Python rounds every
// operation, as PyTorch's schedulers do):
//   MultiStepLR(SGD(lr=0.1), milestones=[2, 5, 5, 8], gamma=0.3), 9 steps
//   ExponentialLR(SGD(lr=0.1), gamma=0.9), 7 steps
//   SGD(lr=0.7) with LinearLR(0.2, 1.0, 3), ExponentialLR(0.85) and MultiStepLR([4, 6], 0.5),
//   stepped in that order, 8 steps
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/ember.h"

namespace test_scheduler_decays {

using namespace ember;

namespace {

struct Run {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer;
  explicit Run(double lr) : optimizer({param}, {.lr = lr}) {}
};

}  // namespace

TEST_CASE("MultiStepLR matches PyTorch, a milestone listed twice decaying by gamma squared") {
  const std::vector<double> expected{0.1,    0.1,    0.03,   0.03, 0.03, 0.0026999999999999997, 0.0026999999999999997,
                                     0.0026999999999999997, 0.0008099999999999998, 0.0008099999999999998};
  Run run(0.1);
  optim::MultiStepLR scheduler(run.optimizer, {8, 5, 2, 5}, 0.3);  // unsorted, as PyTorch's Counter allows
  for (size_t epoch = 0; epoch < expected.size(); ++epoch) {
    CAPTURE(epoch);
    if (epoch > 0) scheduler.step();
    CHECK(run.optimizer.get_lr(0) == expected[epoch]);
    CHECK(scheduler.get_last_lr() == std::vector<double>{expected[epoch]});
  }
}

TEST_CASE("ExponentialLR matches PyTorch") {
  const std::vector<double> expected{0.1,
                                     0.09000000000000001,
                                     0.08100000000000002,
                                     0.07290000000000002,
                                     0.06561000000000002,
                                     0.05904900000000002,
                                     0.05314410000000002,
                                     0.04782969000000002};
  Run run(0.1);
  optim::ExponentialLR scheduler(run.optimizer, 0.9);
  for (size_t epoch = 0; epoch < expected.size(); ++epoch) {
    CAPTURE(epoch);
    if (epoch > 0) scheduler.step();
    CHECK(run.optimizer.get_lr(0) == expected[epoch]);
  }
}

TEST_CASE("LinearLR, ExponentialLR and MultiStepLR chain on one optimizer as in PyTorch") {
  const std::vector<double> expected{0.13999999999999999, 0.2776666666666666,  0.37088333333333323,
                                     0.4298874999999999,  0.18270218749999997, 0.15529685937499998,
                                     0.06600116523437499, 0.05610099044921874, 0.04768584188183593};
  Run run(0.7);
  optim::LinearLR warm_up(run.optimizer, 0.2, 1.0, 3);
  optim::ExponentialLR decay(run.optimizer, 0.85);
  optim::MultiStepLR drops(run.optimizer, {4, 6}, 0.5);
  for (size_t epoch = 0; epoch < expected.size(); ++epoch) {
    CAPTURE(epoch);
    if (epoch > 0) {
      warm_up.step();
      decay.step();
      drops.step();
    }
    CHECK(run.optimizer.get_lr(0) == expected[epoch]);
  }
  CHECK(drops.base_lrs() == std::vector<double>{0.7});  // the initial_lr the warm-up recorded
}

TEST_CASE("MultiStepLR and ExponentialLR refuse a negative or NaN gamma, and round trip their state") {
  Run run(0.1);
  CHECK_THROWS_WITH_AS(optim::MultiStepLR(run.optimizer, {1}, -0.5),
                       doctest::Contains("MultiStepLR: gamma must be non-negative, got -0.5"), Error);
  CHECK_THROWS_WITH_AS(optim::ExponentialLR(run.optimizer, std::nan("")),
                       doctest::Contains("ExponentialLR: gamma must be non-negative, got nan"), Error);
  CHECK_FALSE(run.optimizer.initial_lr(0).has_value());

  optim::ExponentialLR scheduler(run.optimizer, 0.5);
  scheduler.step();
  scheduler.step();
  Run other(0.1);
  optim::ExponentialLR restored(other.optimizer, 0.5);
  restored.load_state_dict(scheduler.state_dict());
  other.optimizer.set_lr(0, run.optimizer.get_lr(0));
  scheduler.step();
  restored.step();
  CHECK(restored.last_epoch() == 3);
  CHECK(restored.get_last_lr() == std::vector<double>{0.0125});
  CHECK(other.optimizer.get_lr(0) == run.optimizer.get_lr(0));
}

}  // namespace test_scheduler_decays
