// RMSprop and Adagrad state dicts: PyTorch's keys, a save/load round trip that continues bit for
// bit (the step count that drives Adagrad's lr_decay included), and load errors.
#include <doctest/doctest.h>

#include <string>

#include "optim_reference.h"
#include "runtime/ember.h"

namespace test_optim_rmsprop_adagrad_state {

using namespace ember;
using ember::optim_reference::Problem;

namespace {

// Trains `steps` steps from `first_step` on the fixed problem's gradients.
void train(optim::Optimizer& optimizer, const std::vector<Tensor>& params, int first_step, int steps) {
  const Problem problem;
  for (int step = first_step; step < first_step + steps; ++step) {
    problem.set_grads(params, step);
    optimizer.step();
  }
}

std::vector<Tensor> copies_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> copies;
  for (const Tensor& param : params) copies.push_back(param.detach().clone().requires_grad_());
  return copies;
}

// Every entry of two state dicts equal: the same keys, values and tensor bits.
void check_same_state(const optim::OptimizerState& expected, const optim::OptimizerState& actual) {
  CHECK(actual.scalars.keys() == expected.scalars.keys());
  for (const auto& [key, value] : expected.scalars) {
    INFO(key);
    CHECK(actual.scalars[key] == value);
  }
  REQUIRE(actual.tensors.keys() == expected.tensors.keys());
  for (const auto& [key, tensor] : expected.tensors) {
    INFO(key);
    CHECK(actual.tensors[key].to_vector<double>() == tensor.to_vector<double>());
  }
}

// Trains one optimizer 3 steps, restores a second (fresh, other options) from its state dict,
// then trains both 3 more: the same parameters and state, bit for bit.
template <typename Optimizer, typename Options>
void check_round_trip(const Options& options, const Options& other_options) {
  const Problem problem;
  std::vector<Tensor> original = problem.make_params(kFloat64);
  Optimizer optimizer(original, options);
  optim::StepLR scheduler(optimizer, 2, 0.5);
  for (int step = 0; step < 3; ++step) {
    train(optimizer, original, step, 1);
    scheduler.step();
  }
  std::vector<Tensor> restored = copies_of(original);
  Optimizer optimizer_copy(restored, other_options);
  optim::StepLR scheduler_copy(optimizer_copy, 2, 0.5);
  optimizer_copy.load_state_dict(optimizer.state_dict());
  scheduler_copy.load_state_dict(scheduler.state_dict());
  check_same_state(optimizer.state_dict(), optimizer_copy.state_dict());
  for (int step = 3; step < 6; ++step) {
    train(optimizer, original, step, 1);
    train(optimizer_copy, restored, step, 1);
    scheduler.step();
    scheduler_copy.step();
  }
  for (size_t i = 0; i < original.size(); ++i)
    CHECK(restored[i].to_vector<double>() == original[i].to_vector<double>());
  check_same_state(optimizer.state_dict(), optimizer_copy.state_dict());
}

}  // namespace

TEST_CASE("RMSprop's state dict has PyTorch's keys") {
  const Problem problem;
  std::vector<Tensor> params = problem.make_params(kFloat32);
  optim::RMSprop optimizer(params, {.lr = 0.01, .alpha = 0.8, .momentum = 0.9, .centered = true});
  train(optimizer, params, 0, 2);
  const optim::OptimizerState state = optimizer.state_dict();
  CHECK(state.scalars.keys() ==
        std::vector<std::string>{"param_groups.0.lr", "param_groups.0.alpha", "param_groups.0.eps",
                                 "param_groups.0.weight_decay", "param_groups.0.momentum", "param_groups.0.centered",
                                 "param_groups.0.maximize", "param_groups.0.num_params", "state.0.step",
                                 "state.1.step"});
  CHECK(state.scalars["param_groups.0.alpha"] == 0.8);
  CHECK(state.scalars["param_groups.0.centered"] == 1.0);
  CHECK(state.scalars["state.1.step"] == 2.0);
  CHECK(state.tensors.keys() == std::vector<std::string>{"state.0.square_avg", "state.0.momentum_buffer",
                                                         "state.0.grad_avg", "state.1.square_avg",
                                                         "state.1.momentum_buffer", "state.1.grad_avg"});
  CHECK(state.tensors["state.0.square_avg"].sizes() == Dims{2, 3});
}

TEST_CASE("RMSprop restored from a state dict continues identically, for every buffer combination") {
  for (const double momentum : {0.0, 0.9})
    for (const bool centered : {false, true}) {
      INFO("momentum ", momentum, ", centered ", centered);
      check_round_trip<optim::RMSprop>(
          optim::RMSpropOptions{.lr = 0.02, .weight_decay = 0.1, .momentum = momentum, .centered = centered},
          optim::RMSpropOptions{.lr = 0.5, .alpha = 0.5});
    }
}

TEST_CASE("Adagrad restored from a state dict continues identically, its lr_decay at the restored step") {
  check_round_trip<optim::Adagrad>(
      optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.25, .weight_decay = 0.05, .initial_accumulator_value = 0.3},
      optim::AdagradOptions{.lr = 0.7});
}

TEST_CASE("RMSprop and Adagrad load_state_dict refuse a state missing a buffer and change nothing") {
  const Problem problem;
  std::vector<Tensor> params = problem.make_params(kFloat64);
  optim::RMSprop rmsprop(params, {.momentum = 0.5});
  train(rmsprop, params, 0, 1);
  optim::OptimizerState state = rmsprop.state_dict();
  state.tensors.erase("state.1.square_avg");
  state.scalars["param_groups.0.lr"] = 0.5;
  CHECK_THROWS_WITH_AS(rmsprop.load_state_dict(state),
                       doctest::Contains("RMSprop: load_state_dict: missing key 'state.1.square_avg'"), Error);
  CHECK(rmsprop.get_lr(0) == 0.01);

  optim::Adagrad adagrad(params);
  optim::OptimizerState adagrad_state = adagrad.state_dict();
  adagrad_state.tensors.erase("state.0.sum");
  CHECK_THROWS_WITH_AS(adagrad.load_state_dict(adagrad_state),
                       doctest::Contains("Adagrad: load_state_dict: missing key 'state.0.sum'"), Error);
  adagrad_state = adagrad.state_dict();
  adagrad_state.tensors.insert("state.0.square_avg", zeros({2, 3}, {.dtype = kFloat64}));
  CHECK_THROWS_WITH_AS(adagrad.load_state_dict(adagrad_state),
                       doctest::Contains("Adagrad: load_state_dict: unexpected key 'state.0.square_avg'"), Error);
}

}  // namespace test_optim_rmsprop_adagrad_state
