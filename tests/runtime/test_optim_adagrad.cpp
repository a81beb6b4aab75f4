// optim::Adagrad against a float64 loop of PyTorch's formulas for every option combination, its
// state from construction on, parameters without gradients, param groups, a scheduler, and its
// option errors.
#include <doctest/doctest.h>

#include <string>

#include "error_of.h"
#include "optim_reference.h"
#include "runtime/ember.h"

namespace test_optim_adagrad {

using namespace ember;
using ember::optim_reference::AdagradReference;
using ember::optim_reference::check_close;
using ember::optim_reference::Problem;
using ember::optim_reference::values_of;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("Adagrad matches PyTorch's formulas in float64 for every option combination over 6 steps") {
  const Problem problem;
  for (const double lr_decay : {0.0, 0.3})
    for (const double weight_decay : {0.0, 0.1})
      for (const double initial_accumulator_value : {0.0, 0.4}) {
        const optim::AdagradOptions options{.lr = 0.05, .lr_decay = lr_decay, .weight_decay = weight_decay,
                                            .initial_accumulator_value = initial_accumulator_value, .eps = 1e-3};
        INFO("lr_decay ", lr_decay, ", weight_decay ", weight_decay, ", initial_accumulator_value ",
             initial_accumulator_value);
        std::vector<Tensor> params = problem.make_params(kFloat64);
        optim::Adagrad optimizer(params, options);
        std::vector<AdagradReference> reference{AdagradReference(problem.initial[0], initial_accumulator_value),
                                                AdagradReference(problem.initial[1], initial_accumulator_value)};
        for (int step = 0; step < 6; ++step) {
          problem.set_grads(params, step);
          optimizer.step();
          for (size_t p = 0; p < params.size(); ++p) reference[p].step(values_of(params[p].grad()), options);
        }
        for (size_t p = 0; p < params.size(); ++p) {
          INFO("parameter ", p);
          check_close(params[p], reference[p].param, 1e-12);
          const optim::AdagradParamState* state = optimizer.state(params[p]);
          REQUIRE(state != nullptr);
          CHECK(state->step == 6);
          check_close(state->sum, reference[p].sum, 1e-12);
        }
      }
}

TEST_CASE("Adagrad in float32 follows the float64 formulas to float32 rounding") {
  const Problem problem;
  const optim::AdagradOptions options{.lr = 0.1, .lr_decay = 0.05, .weight_decay = 0.02,
                                      .initial_accumulator_value = 0.1};
  std::vector<Tensor> params = problem.make_params(kFloat32);
  optim::Adagrad optimizer(params, options);
  std::vector<AdagradReference> reference{AdagradReference(problem.initial[0], 0.1),
                                          AdagradReference(problem.initial[1], 0.1)};
  for (int step = 0; step < 5; ++step) {
    problem.set_grads(params, step);
    optimizer.step();
    for (size_t p = 0; p < params.size(); ++p)
      reference[p].step(Problem::grad(p, problem.initial[p].size(), step), options);
  }
  for (size_t p = 0; p < params.size(); ++p) check_close(params[p], reference[p].param, 1e-5);
}

TEST_CASE("Adagrad's state exists from construction, and parameters without gradients keep it unchanged") {
  // As PyTorch: step 0 and sum = initial_accumulator_value for every parameter at once.
  Tensor used = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  Tensor unused = from_vector<double>({3.0, 4.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  optim::Adagrad optimizer({used, unused}, {.lr = 0.1, .initial_accumulator_value = 0.25});
  const optim::OptimizerState fresh = optimizer.state_dict();
  CHECK(fresh.scalars.keys() ==
        std::vector<std::string>{"param_groups.0.lr", "param_groups.0.lr_decay", "param_groups.0.weight_decay",
                                 "param_groups.0.initial_accumulator_value", "param_groups.0.eps",
                                 "param_groups.0.maximize", "param_groups.0.num_params", "state.0.step",
                                 "state.1.step"});
  CHECK(fresh.scalars["state.1.step"] == 0.0);
  CHECK(fresh.tensors.keys() == std::vector<std::string>{"state.0.sum", "state.1.sum"});
  CHECK(values_of(fresh.tensors["state.1.sum"]) == std::vector<double>{0.25, 0.25});

  for (int step = 0; step < 3; ++step) {
    used.set_grad(from_vector<double>({1.0, -2.0}, {2}, {.dtype = kFloat64}));
    optimizer.step();
  }
  CHECK(values_of(unused) == std::vector<double>{3.0, 4.0});
  CHECK(optimizer.state(unused)->step == 0);
  CHECK(values_of(optimizer.state(unused)->sum) == std::vector<double>{0.25, 0.25});
  CHECK(optimizer.state(used)->step == 3);
  CHECK(values_of(optimizer.state(used)->sum) == std::vector<double>{3.25, 12.25});
}

TEST_CASE("Adagrad refusing a later expanded parameter leaves the earlier ones and their state as they were") {
  Tensor first = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  Tensor expanded = full({1}, 0.5, {.dtype = kFloat64}).expand({2}).detach().requires_grad_();
  optim::Adagrad optimizer({first, expanded}, {.lr = 0.1, .initial_accumulator_value = 0.25});
  first.set_grad(from_vector<double>({0.5, -1.0}, {2}, {.dtype = kFloat64}));
  expanded.set_grad(ones({2}, {.dtype = kFloat64}));
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { optimizer.step(); });
  CHECK(message.find("Adagrad: parameter 1 of group 0 (shape [2], strides [0]) is expanded") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(values_of(first) == std::vector<double>{1.0, 2.0});
  CHECK(optimizer.state(first)->step == 0);
  CHECK(values_of(optimizer.state(first)->sum) == std::vector<double>{0.25, 0.25});
}

TEST_CASE("Adagrad param groups use their own options, and a scheduler's rates reach the update") {
  const Problem problem;
  std::vector<Tensor> params = problem.make_params(kFloat64);
  const optim::AdagradOptions first{.lr = 0.1, .lr_decay = 0.2};
  const optim::AdagradOptions second{.lr = 0.3, .weight_decay = 0.1, .initial_accumulator_value = 0.5};
  optim::Adagrad optimizer({params[0]}, first);
  optimizer.add_param_group({params[1]}, second);
  // The added group's state starts from its own initial_accumulator_value.
  CHECK(values_of(optimizer.state(params[1])->sum) == std::vector<double>(4, 0.5));
  optim::ExponentialLR scheduler(optimizer, 0.8);
  std::vector<AdagradReference> reference{AdagradReference(problem.initial[0], 0.0),
                                          AdagradReference(problem.initial[1], 0.5)};
  for (int step = 0; step < 6; ++step) {
    problem.set_grads(params, step);
    optimizer.step();
    optim::AdagradOptions now_first = first, now_second = second;
    now_first.lr = optimizer.get_lr(0);
    now_second.lr = optimizer.get_lr(1);
    reference[0].step(Problem::grad(0, 6, step), now_first);
    reference[1].step(Problem::grad(1, 4, step), now_second);
    scheduler.step();
  }
  check_close(params[0], reference[0].param, 1e-12);
  check_close(params[1], reference[1].param, 1e-12);
  CHECK(optimizer.get_lr(0) == doctest::Approx(0.1 * std::pow(0.8, 6)).epsilon(1e-14));
}

TEST_CASE("Adagrad's decayed rate follows PyTorch's lr / (1 + (step - 1) * lr_decay)") {
  CHECK(optim::Adagrad::decayed_lr(0.1, 0.5, 1) == 0.1);
  CHECK(optim::Adagrad::decayed_lr(0.1, 0.5, 3) == 0.1 / 2.0);
  CHECK(optim::Adagrad::decayed_lr(0.3, 0.0, 7) == 0.3);
}

TEST_CASE("Adagrad option errors use PyTorch's words and name the caller's line") {
  Tensor param = from_vector<float>({1.0f}).requires_grad_();
  const std::vector<std::pair<optim::AdagradOptions, std::string>> cases = {
      {{.lr = -1.0}, "Adagrad: Invalid learning rate: -1"},
      {{.lr_decay = -0.5}, "Adagrad: Invalid lr_decay value: -0.5"},
      {{.weight_decay = -0.01}, "Adagrad: Invalid weight_decay value: -0.01"},
      {{.initial_accumulator_value = -0.1}, "Adagrad: Invalid initial_accumulator_value value: -0.1"},
      {{.eps = -1e-10}, "Adagrad: Invalid epsilon value: -1e-10"},
  };
  for (const auto& [options, expected] : cases) {
    const int line = __LINE__ + 1;
    const std::string message = error_of([&] { optim::Adagrad bad({param}, options); });
    CHECK(message.find(expected) != std::string::npos);
    CHECK(names_line(message, line));
  }
  optim::Adagrad optimizer({param});
  Tensor other = from_vector<float>({2.0f}).requires_grad_();
  int line = __LINE__ + 1;
  std::string message = error_of([&] { optimizer.add_param_group({other}, optim::AdagradOptions{.lr_decay = -1.0}); });
  CHECK(message.find("Adagrad: Invalid lr_decay value: -1") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(optimizer.num_param_groups() == 1);
  CHECK(optimizer.state(other) == nullptr);

  optim::OptimizerState state = optimizer.state_dict();
  state.scalars["param_groups.0.initial_accumulator_value"] = -3.0;
  line = __LINE__ + 1;
  message = error_of([&] { optimizer.load_state_dict(state); });
  CHECK(message.find("Adagrad: load_state_dict: param_groups.0: Invalid initial_accumulator_value value: -3") !=
        std::string::npos);
  CHECK(names_line(message, line));
}

}  // namespace test_optim_adagrad
