// SWALR against PyTorch 2.3's annealing written here in closed form (the rate at step k is
// swa_lr * f(min(1, k / E)) + lr_start * (1 - f(...)), f the cosine or linear ramp), which the
// scheduler computes recursively from the optimizer's current rate; its refusals and state dict.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"
#include "runtime/optim/swa_utils.h"

namespace test_swa_lr {

using namespace ember;
using ember::testing::error_of;

namespace {

double swa_reference(int64_t step, double start_lr, double swa_lr, int64_t anneal_epochs, const std::string& strategy) {
  const double t = anneal_epochs == 0 ? 1.0 : std::min(1.0, static_cast<double>(step) / anneal_epochs);
  const double alpha = strategy == "cos" ? 0.5 * (1.0 - std::cos(std::numbers::pi * t)) : t;
  return start_lr + (swa_lr - start_lr) * alpha;
}

// Two groups with different starting rates, so a per-group swa_lr and a shared one both show.
struct TwoGroups {
  Tensor first = ones({2}).requires_grad_();
  Tensor second = ones({3}).requires_grad_();
  optim::SGD optimizer{{first}, {.lr = 0.5}};
  TwoGroups() { optimizer.add_param_group({second}, optim::SGDOptions{.lr = 0.2}); }
};

}  // namespace

TEST_CASE("SWALR anneals each group from its rate to swa_lr, cosine and linear, then holds it") {
  for (std::string strategy : {"cos", "linear"}) {
    for (int64_t anneal_epochs : {0, 1, 4, 7}) {
      CAPTURE(strategy);
      CAPTURE(anneal_epochs);
      TwoGroups groups;
      optim::SWALR scheduler(groups.optimizer, {0.05, 0.3}, anneal_epochs, strategy);
      for (int64_t step = 0; step <= anneal_epochs + 3; ++step) {
        if (step > 0) scheduler.step();
        CAPTURE(step);
        CHECK(groups.optimizer.get_lr(0) ==
              doctest::Approx(swa_reference(step, 0.5, 0.05, anneal_epochs, strategy)).epsilon(1e-13));
        CHECK(groups.optimizer.get_lr(1) ==
              doctest::Approx(swa_reference(step, 0.2, 0.3, anneal_epochs, strategy)).epsilon(1e-13));
        CHECK(scheduler.get_last_lr()[0] == groups.optimizer.get_lr(0));
      }
      // Once annealed the rate is swa_lr exactly: PyTorch returns swa_lr when the previous alpha is 1.
      CHECK(groups.optimizer.get_lr(0) == 0.05);
      CHECK(groups.optimizer.get_lr(1) == 0.3);
    }
  }
}

TEST_CASE("SWALR matches rates worked out by hand") {
  // Linear over 4 epochs from 0.5 to 0.1: steps of 0.1. Cosine: alpha(1/4) = (1 - cos(pi/4)) / 2.
  TwoGroups linear_groups;
  optim::SWALR linear(linear_groups.optimizer, {0.1}, 4, "linear");
  std::vector<double> seen{linear_groups.optimizer.get_lr(0)};
  for (int i = 0; i < 5; ++i) {
    linear.step();
    seen.push_back(linear_groups.optimizer.get_lr(0));
  }
  const std::vector<double> expected{0.5, 0.4, 0.3, 0.2, 0.1, 0.1};
  for (size_t i = 0; i < expected.size(); ++i) CHECK(seen[i] == doctest::Approx(expected[i]).epsilon(1e-14));
  TwoGroups cosine_groups;
  optim::SWALR cosine(cosine_groups.optimizer, {0.1}, 4, "cos");
  cosine.step();
  CHECK(cosine_groups.optimizer.get_lr(0) == doctest::Approx(0.5 - 0.4 * 0.1464466094067262).epsilon(1e-14));
  CHECK(cosine_groups.optimizer.get_lr(1) == doctest::Approx(0.2 - 0.1 * 0.1464466094067262).epsilon(1e-14));
}

TEST_CASE("SWALR starts from the rate the optimizer has when annealing begins") {
  // Recursive like PyTorch's: a rate set by hand (or another scheduler) before the first step is
  // the one annealed from.
  TwoGroups groups;
  optim::SWALR scheduler(groups.optimizer, {0.05}, 3, "linear");
  groups.optimizer.set_lr(0, 0.35);
  for (int64_t step = 1; step <= 4; ++step) {
    scheduler.step();
    CHECK(groups.optimizer.get_lr(0) == doctest::Approx(swa_reference(step, 0.35, 0.05, 3, "linear")).epsilon(1e-13));
  }
}

TEST_CASE("SWALR refuses bad settings and leaves the optimizer as it was") {
  TwoGroups groups;
  auto refused = [&](auto make, const std::string& expected) {
    const std::string message = error_of(make);
    CHECK_MESSAGE(message.find(expected) != std::string::npos, message);
    CHECK(message.find("test_swa_lr.cpp") != std::string::npos);
    CHECK(groups.optimizer.get_lr(0) == 0.5);
    CHECK(groups.optimizer.get_lr(1) == 0.2);
    CHECK_FALSE(groups.optimizer.initial_lr(0).has_value());
  };
  refused(
      [&] {
        optim::SWALR(groups.optimizer, {0.1, 0.2, 0.3});
      },
      "SWALR: swa_lr must have one value per parameter group (2) or one for all, got 3 values");
  refused([&] { optim::SWALR(groups.optimizer, {}); }, "got 0 values");
  refused(
      [&] {
        optim::SWALR(groups.optimizer, {0.1, -0.2});
      },
      "SWALR: swa_lr of parameter group 1 must be finite and non-negative, got -0.2");
  refused([&] { optim::SWALR(groups.optimizer, {NAN}); }, "swa_lr of parameter group 0 must be finite");
  refused([&] { optim::SWALR(groups.optimizer, {0.1}, 5, "exp"); },
          "SWALR: anneal_strategy must be one of 'cos' or 'linear', got 'exp'");
  refused([&] { optim::SWALR(groups.optimizer, {0.1}, -1); },
          "SWALR: anneal_epochs must be equal or greater than 0, got -1");
}

TEST_CASE("SWALR's state dict resumes the schedule in a new scheduler") {
  TwoGroups original;
  optim::SWALR scheduler(original.optimizer, {0.05, 0.3}, 6, "cos");
  for (int i = 0; i < 2; ++i) scheduler.step();
  const OrderedDict<double> state = scheduler.state_dict();
  CHECK(state.at("last_epoch") == 2.0);

  // The resumed optimizer carries the saved rates (its own state dict would); the scheduler its epoch.
  TwoGroups resumed;
  optim::SWALR restored(resumed.optimizer, {0.05, 0.3}, 6, "cos");
  restored.load_state_dict(state);
  for (size_t g = 0; g < 2; ++g) resumed.optimizer.set_lr(g, original.optimizer.get_lr(g));
  for (int64_t step = 3; step <= 8; ++step) {
    scheduler.step();
    restored.step();
    CHECK(restored.last_epoch() == step);
    CHECK(resumed.optimizer.get_lr(0) == original.optimizer.get_lr(0));
    CHECK(resumed.optimizer.get_lr(1) == original.optimizer.get_lr(1));
    CHECK(resumed.optimizer.get_lr(0) == doctest::Approx(swa_reference(step, 0.5, 0.05, 6, "cos")).epsilon(1e-13));
  }
}

}  // namespace test_swa_lr
