// Learning-rate schedulers against the sequences PyTorch 1.13 produces, plus their state dicts.
// Each sequence was printed by:
//   p = torch.nn.Parameter(torch.zeros(1)); opt = torch.optim.SGD([p], lr=0.1); s = make(opt)
//   out = [s.get_last_lr()[0]]
//   for _ in range(steps): opt.step(); s.step(); out.append(s.get_last_lr()[0])
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <tuple>

#include "runtime/ember.h"

namespace test_schedulers {

using namespace ember;

namespace {

// The learning rate after construction and after each of `expected.size() - 1` steps.
template <typename MakeScheduler>
void check_sequence(MakeScheduler make, const std::vector<double>& expected) {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  auto scheduler = make(optimizer);
  for (size_t step = 0; step < expected.size(); ++step) {
    if (step > 0) scheduler->step();
    CAPTURE(step);
    REQUIRE(scheduler->get_last_lr().size() == 1);
    // The recursive formulas are PyTorch's own, so the numbers agree to the last bits.
    CHECK(scheduler->get_last_lr()[0] == doctest::Approx(expected[step]).epsilon(1e-15));
    CHECK(optimizer.get_lr(0) == scheduler->get_last_lr()[0]);
  }
}

}  // namespace

TEST_CASE("StepLR matches PyTorch") {
  // StepLR(o, step_size=2, gamma=0.5), 7 steps
  check_sequence([](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 2, 0.5); },
                 {0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125});
}

TEST_CASE("CosineAnnealingLR matches PyTorch through a restart") {
  // CosineAnnealingLR(o, T_max=4, eta_min=0.01), 10 steps
  check_sequence([](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 4, 0.01); },
                 {0.1, 0.08681980515339464, 0.05500000000000001, 0.023180194846605363, 0.01, 0.023180194846605363,
                  0.05500000000000002, 0.08681980515339469, 0.10000000000000006, 0.0868198051533947,
                  0.05500000000000005});
}

TEST_CASE("CosineAnnealingLR with a non-zero eta_min matches PyTorch bit for bit") {
  // PyTorch 1.13's CosineAnnealingLR.get_lr() recursion evaluated in python3 (whose float
  // arithmetic rounds every operation, as PyTorch's does): SGD(lr=0.1), T_max=7, eta_min=0.0013,
  // and SGD(lr=1.7), T_max=5, eta_min=0.01. A fused multiply-add in
  // `ratio * (lr - eta_min) + eta_min` puts about half of these an ulp off; with eta_min = 0 it
  // rounds alike either way, which is why the sequences above did not show it.
  const std::vector<double> slow{0.1, 0.09511281363098438, 0.0814192217217285, 0.06163140809074412,
                                 0.039668591909255896, 0.019880778278271505, 0.006187186369015621, 0.0013,
                                 0.006187186369015616, 0.019880778278271494, 0.03966859190925589,
                                 0.061631408090744084, 0.0814192217217285, 0.09511281363098441,
                                 0.10000000000000002, 0.09511281363098442};
  const std::vector<double> fast{1.7, 1.5386193602468305, 1.1161193602468304, 0.5938806397531694,
                                 0.17138063975316947, 0.01, 0.17138063975316942, 0.5938806397531696,
                                 1.116119360246831, 1.5386193602468312, 1.7000000000000006, 1.5386193602468317};
  for (const auto& [lr, T_max, eta_min, expected] :
       {std::tuple{0.1, int64_t{7}, 0.0013, slow}, std::tuple{1.7, int64_t{5}, 0.01, fast}}) {
    Tensor param = zeros({1}).requires_grad_();
    optim::SGD optimizer({param}, {.lr = lr});
    optim::CosineAnnealingLR scheduler(optimizer, T_max, eta_min);
    for (size_t epoch = 0; epoch < expected.size(); ++epoch) {
      if (epoch > 0) scheduler.step();
      CAPTURE(lr);
      CAPTURE(epoch);
      CHECK(optimizer.get_lr(0) == expected[epoch]);
    }
  }
}

TEST_CASE("LambdaLR matches PyTorch") {
  // LambdaLR(o, lambda e: 0.95 ** e), 5 steps
  check_sequence(
      [](optim::Optimizer& o) {
        return std::make_unique<optim::LambdaLR>(o, [](int64_t epoch) { return std::pow(0.95, epoch); });
      },
      {0.1, 0.095, 0.09025, 0.0857375, 0.081450625, 0.07737809374999999});
}

TEST_CASE("LinearLR warm-up matches PyTorch") {
  // LinearLR(o, start_factor=0.25, total_iters=4), 7 steps
  check_sequence([](optim::Optimizer& o) { return std::make_unique<optim::LinearLR>(o, 0.25, 1.0, 4); },
                 {0.025, 0.043750000000000004, 0.06250000000000001, 0.08125000000000002, 0.10000000000000002,
                  0.10000000000000002, 0.10000000000000002, 0.10000000000000002});
}

TEST_CASE("LambdaLR takes one lambda per parameter group") {
  Tensor first = zeros({1}).requires_grad_();
  Tensor second = zeros({1}).requires_grad_();
  optim::Adam optimizer({first}, {.lr = 0.1});
  optimizer.add_param_group({second}, optim::AdamOptions{.lr = 0.2});
  optim::LambdaLR scheduler(optimizer, {[](int64_t epoch) { return 1.0 / (epoch + 1); },
                                        [](int64_t epoch) { return 2.0 * epoch + 1; }});
  scheduler.step();
  scheduler.step();
  CHECK(scheduler.last_epoch() == 2);
  CHECK(optimizer.get_lr(0) == doctest::Approx(0.1 / 3).epsilon(1e-15));
  CHECK(optimizer.get_lr(1) == doctest::Approx(1.0).epsilon(1e-15));
  CHECK_THROWS_WITH_AS(optim::LambdaLR(optimizer, std::vector<optim::LambdaLR::Lambda>{[](int64_t) { return 1.0; }}),
                       doctest::Contains("LambdaLR: got 1 lambdas for 2 parameter groups"), Error);
}

TEST_CASE("scheduler state dicts round trip and reject a mismatch") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  optim::StepLR scheduler(optimizer, 2, 0.5);
  for (int i = 0; i < 3; ++i) scheduler.step();
  const OrderedDict<double> state = scheduler.state_dict();
  CHECK(state.keys() == std::vector<std::string>{"last_epoch", "step_count", "base_lrs.0", "last_lr.0"});
  CHECK(state["last_epoch"] == 3.0);
  CHECK(state["step_count"] == 4.0);
  CHECK(state["last_lr.0"] == 0.05);

  Tensor other_param = zeros({1}).requires_grad_();
  optim::SGD other({other_param}, {.lr = 0.1});
  optim::StepLR restored(other, 2, 0.5);
  restored.load_state_dict(state);
  other.set_lr(0, optimizer.get_lr(0));  // the optimizer's own state dict carries its lr
  CHECK(restored.last_epoch() == 3);
  restored.step();
  scheduler.step();
  CHECK(restored.get_last_lr() == scheduler.get_last_lr());
  CHECK(restored.get_last_lr()[0] == 0.025);

  OrderedDict<double> broken = state;
  broken.insert("base_lrs.1", 0.1);
  CHECK_THROWS_WITH_AS(restored.load_state_dict(broken), doctest::Contains("expected 4 entries"), Error);
  CHECK(restored.last_epoch() == 4);
  // Values a scheduler could not have saved are refused and change nothing (a NaN counter cast
  // to int64 was undefined behaviour).
  for (const auto& [key, value] : std::vector<std::pair<std::string, double>>{
           {"last_epoch", NAN}, {"last_epoch", 1e300}, {"last_epoch", -7.0}, {"last_epoch", 2.5},
           {"step_count", -1.0}, {"base_lrs.0", -0.1}, {"last_lr.0", INFINITY}}) {
    INFO(key, " = ", value);
    OrderedDict<double> bad = state;
    bad[key] = value;
    CHECK_THROWS_WITH_AS(restored.load_state_dict(bad), doctest::Contains(("'" + key + "' must be").c_str()), Error);
    CHECK(restored.last_epoch() == 4);
  }
  CHECK_THROWS_WITH_AS(optim::StepLR(other, 0), doctest::Contains("StepLR: step_size must be positive, got 0"), Error);
}

TEST_CASE("chained schedulers take their base rates from each group's initial_lr, as PyTorch") {
  // PyTorch: the first scheduler made on a group records its lr as 'initial_lr', and every
  // scheduler's base rate is that. A warm-up then a cosine on SGD(lr = 1) multiply their
  // factors, so the rate is the closed form min(1, 0.1 + 0.3 e) * (1 + cos(pi e / 4)) / 2: the
  // cosine's restart at epoch 5 adds (base - eta_min) * (1 - cos(pi / 4)) / 2 with base 1, not
  // the 0.1 the warm-up had set when the cosine was made.
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  optim::LinearLR warm_up(optimizer, 0.1, 1.0, 3);
  optim::CosineAnnealingLR cosine(optimizer, 4, 0.0);
  CHECK(warm_up.base_lrs() == std::vector<double>{1.0});
  CHECK(cosine.base_lrs() == std::vector<double>{1.0});
  for (int epoch = 0; epoch <= 12; ++epoch) {
    CAPTURE(epoch);
    if (epoch > 0) {
      warm_up.step();
      cosine.step();
    }
    const double expected = std::min(1.0, 0.1 + 0.3 * epoch) * (1.0 + std::cos(std::numbers::pi * epoch / 4.0)) / 2.0;
    CHECK(optimizer.get_lr(0) == doctest::Approx(expected).epsilon(1e-12));
  }

  // LambdaLR sets base * lambda(epoch): its base is the initial 1, not the warm-up's 0.5.
  Tensor other = zeros({1}).requires_grad_();
  optim::SGD second({other}, {.lr = 1.0});
  optim::LinearLR half_warm_up(second, 0.5, 1.0, 2);
  optim::LambdaLR decay(second, [](int64_t epoch) { return std::pow(0.9, static_cast<double>(epoch)); });
  for (int epoch = 0; epoch <= 4; ++epoch) {
    CAPTURE(epoch);
    if (epoch > 0) {
      half_warm_up.step();
      decay.step();
    }
    CHECK(second.get_lr(0) == std::pow(0.9, static_cast<double>(epoch)));
  }
}

TEST_CASE("an optimizer's state dict carries initial_lr, so a scheduler made after loading keeps the base") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  CHECK(optimizer.state_dict().scalars.find("param_groups.0.initial_lr") == nullptr);  // no scheduler yet
  optim::StepLR scheduler(optimizer, 1, 0.5);
  for (int i = 0; i < 3; ++i) scheduler.step();
  const optim::OptimizerState state = optimizer.state_dict();
  REQUIRE(state.scalars.find("param_groups.0.initial_lr") != nullptr);
  CHECK(state.scalars.at("param_groups.0.initial_lr") == 1.0);
  CHECK(state.scalars.at("param_groups.0.lr") == 0.125);

  Tensor other = zeros({1}).requires_grad_();
  optim::SGD restored({other}, {.lr = 0.3});
  restored.load_state_dict(state);
  CHECK(restored.get_lr(0) == 0.125);
  optim::LambdaLR resumed(restored, [](int64_t) { return 0.5; });
  CHECK(resumed.base_lrs() == std::vector<double>{1.0});
  CHECK(restored.get_lr(0) == 0.5);
  CHECK(restored.state_dict().scalars.at("param_groups.0.initial_lr") == 1.0);

  // A state saved without a scheduler has none, and loading it drops the one there was.
  Tensor plain_param = zeros({1}).requires_grad_();
  optim::SGD plain({plain_param}, {.lr = 0.2});
  restored.load_state_dict(plain.state_dict());
  CHECK(restored.state_dict().scalars.find("param_groups.0.initial_lr") == nullptr);
  optim::OptimizerState negative = state;
  negative.scalars["param_groups.0.initial_lr"] = -1.0;
  CHECK_THROWS_WITH_AS(restored.load_state_dict(negative),
                       doctest::Contains("SGD: load_state_dict: 'param_groups.0.initial_lr' must be a finite "
                                         "non-negative learning rate, got -1"),
                       Error);
  CHECK(restored.get_lr(0) == 0.2);
}

TEST_CASE("a scheduler refuses a step after a parameter group was added, and stays where it was") {
  // PyTorch's schedulers silently update some or all groups then (zip over base_lrs); ember
  // says so instead, before the epoch advances or any rate changes.
  Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  optim::SGD optimizer({a}, {.lr = 0.1});
  optim::StepLR scheduler(optimizer, 1, 0.5);
  optimizer.add_param_group({b}, optim::SGDOptions{.lr = 0.3});
  CHECK_THROWS_WITH_AS(scheduler.step(),
                       doctest::Contains("StepLR.step: the optimizer has 2 parameter groups, the scheduler was made "
                                         "for 1"),
                       Error);
  CHECK_THROWS_WITH_AS(scheduler.step(), doctest::Contains("test_schedulers.cpp"), Error);  // the caller's line
  CHECK(scheduler.last_epoch() == 0);
  CHECK(scheduler.get_last_lr() == std::vector<double>{0.1});
  CHECK(optimizer.get_lr(0) == 0.1);
  CHECK(optimizer.get_lr(1) == 0.3);
}

}  // namespace test_schedulers
