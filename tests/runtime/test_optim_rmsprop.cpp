// optim::RMSprop against a float64 loop of PyTorch's formulas for every option combination, its
// state, parameters without gradients, param groups, a scheduler, and its option errors.
#include <doctest/doctest.h>

#include <string>

#include "error_of.h"
#include "optim_reference.h"
#include "runtime/ember.h"

namespace test_optim_rmsprop {

using namespace ember;
using ember::optim_reference::check_close;
using ember::optim_reference::Problem;
using ember::optim_reference::RmspropReference;
using ember::optim_reference::values_of;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("RMSprop matches PyTorch's formulas in float64 for every option combination over 6 steps") {
  const Problem problem;
  for (const double weight_decay : {0.0, 0.1})
    for (const double momentum : {0.0, 0.9})
      for (const bool centered : {false, true}) {
        const optim::RMSpropOptions options{.lr = 0.01, .alpha = 0.9, .eps = 1e-3, .weight_decay = weight_decay,
                                            .momentum = momentum, .centered = centered};
        INFO("weight_decay ", weight_decay, ", momentum ", momentum, ", centered ", centered);
        std::vector<Tensor> params = problem.make_params(kFloat64);
        optim::RMSprop optimizer(params, options);
        std::vector<RmspropReference> reference{RmspropReference(problem.initial[0]),
                                                RmspropReference(problem.initial[1])};
        for (int step = 0; step < 6; ++step) {
          problem.set_grads(params, step);
          optimizer.step();
          for (size_t p = 0; p < params.size(); ++p) reference[p].step(values_of(params[p].grad()), options);
        }
        for (size_t p = 0; p < params.size(); ++p) {
          INFO("parameter ", p);
          check_close(params[p], reference[p].param, 1e-12);
          const optim::RMSpropParamState* state = optimizer.state(params[p]);
          REQUIRE(state != nullptr);
          CHECK(state->step == 6);
          check_close(state->square_avg, reference[p].square_avg, 1e-12);
          CHECK(state->momentum_buffer.defined() == (momentum > 0.0));
          if (momentum > 0.0) check_close(state->momentum_buffer, reference[p].momentum_buffer, 1e-12);
          CHECK(state->grad_avg.defined() == centered);
          if (centered) check_close(state->grad_avg, reference[p].grad_avg, 1e-12);
        }
      }
}

TEST_CASE("RMSprop in float32 follows the float64 formulas to float32 rounding") {
  const Problem problem;
  const optim::RMSpropOptions options{.lr = 0.01, .weight_decay = 0.05, .momentum = 0.5, .centered = true};
  std::vector<Tensor> params = problem.make_params(kFloat32);
  optim::RMSprop optimizer(params, options);
  std::vector<RmspropReference> reference{RmspropReference(problem.initial[0]), RmspropReference(problem.initial[1])};
  for (int step = 0; step < 5; ++step) {
    problem.set_grads(params, step);
    optimizer.step();
    for (size_t p = 0; p < params.size(); ++p)
      reference[p].step(Problem::grad(p, problem.initial[p].size(), step), options);
  }
  for (size_t p = 0; p < params.size(); ++p) check_close(params[p], reference[p].param, 1e-5);
}

TEST_CASE("RMSprop adds eps after the square root, as PyTorch does") {
  // One step from p = 1 with g = 2, alpha = 0.5, eps = 0.5: square_avg = 2 and
  // p = 1 - 0.1 * 2 / (sqrt(2) + 0.5) = 0.89551774...; eps inside the root would give 0.87350889.
  Tensor param = from_vector<double>({1.0}, {1}, {.dtype = kFloat64}).requires_grad_();
  optim::RMSprop optimizer({param}, {.lr = 0.1, .alpha = 0.5, .eps = 0.5});
  param.set_grad(from_vector<double>({2.0}, {1}, {.dtype = kFloat64}));
  optimizer.step();
  CHECK(param.item() == doctest::Approx(1.0 - 0.2 / (std::sqrt(2.0) + 0.5)).epsilon(1e-15));
}

TEST_CASE("RMSprop skips parameters without gradients and gives them no state") {
  Tensor used = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  Tensor unused = from_vector<double>({3.0, 4.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  optim::RMSprop optimizer({used, unused}, {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < 2; ++step) {
    used.set_grad(from_vector<double>({1.0, -1.0}, {2}, {.dtype = kFloat64}));
    optimizer.step();
  }
  CHECK(values_of(unused) == std::vector<double>{3.0, 4.0});
  CHECK(optimizer.state(unused) == nullptr);
  REQUIRE(optimizer.state(used) != nullptr);
  CHECK(optimizer.state(used)->step == 2);
  CHECK(optimizer.state_dict().tensors.keys() ==
        std::vector<std::string>{"state.0.square_avg", "state.0.momentum_buffer"});
}

TEST_CASE("RMSprop param groups use their own options, and a scheduler's rates reach the update") {
  const Problem problem;
  std::vector<Tensor> params = problem.make_params(kFloat64);
  const optim::RMSpropOptions first{.lr = 0.02, .momentum = 0.8};
  const optim::RMSpropOptions second{.lr = 0.05, .alpha = 0.7, .weight_decay = 0.2, .centered = true};
  optim::RMSprop optimizer({params[0]}, first);
  optimizer.add_param_group({params[1]}, second);
  optim::StepLR scheduler(optimizer, 2, 0.5);
  std::vector<RmspropReference> reference{RmspropReference(problem.initial[0]), RmspropReference(problem.initial[1])};
  for (int step = 0; step < 6; ++step) {
    problem.set_grads(params, step);
    optimizer.step();
    const double decay = std::pow(0.5, step / 2);  // StepLR(2, 0.5): the rate of this step
    optim::RMSpropOptions now_first = first, now_second = second;
    now_first.lr *= decay;
    now_second.lr *= decay;
    reference[0].step(Problem::grad(0, 6, step), now_first);
    reference[1].step(Problem::grad(1, 4, step), now_second);
    scheduler.step();
  }
  check_close(params[0], reference[0].param, 1e-12);
  check_close(params[1], reference[1].param, 1e-12);
  CHECK(optimizer.get_lr(1) == 0.05 * 0.125);
}

TEST_CASE("RMSprop option errors use PyTorch's words and name the caller's line") {
  Tensor param = from_vector<float>({1.0f}).requires_grad_();
  const std::vector<std::pair<optim::RMSpropOptions, std::string>> cases = {
      {{.lr = -1.0}, "RMSprop: Invalid learning rate: -1"},
      {{.eps = -0.5}, "RMSprop: Invalid epsilon value: -0.5"},
      {{.momentum = -0.9}, "RMSprop: Invalid momentum value: -0.9"},
      {{.weight_decay = -0.01}, "RMSprop: Invalid weight_decay value: -0.01"},
      {{.alpha = -0.99}, "RMSprop: Invalid alpha value: -0.99"},
      {{.lr = std::nan("")}, "RMSprop: Invalid learning rate: nan"},
  };
  for (const auto& [options, expected] : cases) {
    const int line = __LINE__ + 1;
    const std::string message = error_of([&] { optim::RMSprop bad({param}, options); });
    CHECK(message.find(expected) != std::string::npos);
    CHECK(names_line(message, line));
  }
  optim::RMSprop optimizer({param});
  Tensor other = from_vector<float>({2.0f}).requires_grad_();
  int line = __LINE__ + 1;
  std::string message = error_of([&] { optimizer.add_param_group({other}, optim::RMSpropOptions{.alpha = -1.0}); });
  CHECK(message.find("RMSprop: Invalid alpha value: -1") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(optimizer.num_param_groups() == 1);

  optim::OptimizerState state = optimizer.state_dict();
  state.scalars["param_groups.0.momentum"] = -2.0;
  line = __LINE__ + 1;
  message = error_of([&] { optimizer.load_state_dict(state); });
  CHECK(message.find("RMSprop: load_state_dict: param_groups.0: Invalid momentum value: -2") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(optimizer.param_groups()[0].options.momentum == 0.0);
}

TEST_CASE("RMSprop refuses an expanded parameter before changing its state, naming the step's line") {
  Tensor expanded = from_vector<float>({0.5f}).expand({3}).detach();
  expanded.requires_grad_();
  expanded.set_grad(ones({3}));
  optim::RMSprop optimizer({expanded});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { optimizer.step(); });
  CHECK(message.find("RMSprop: parameter 0 of group 0 (shape [3], strides [0]) is expanded") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(optimizer.state(expanded) == nullptr);
  CHECK(expanded.to_vector<float>() == std::vector<float>{0.5f, 0.5f, 0.5f});
}

TEST_CASE("RMSprop refusing a later expanded parameter leaves the earlier ones and their state as they were") {
  // Every parameter is checked before the first is written, so the failed step changes nothing
  // (as SGD's and Adam's multi-tensor steps): a retry after clone() starts from the same point.
  Tensor first = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  Tensor expanded = full({1}, 0.5, {.dtype = kFloat64}).expand({2}).detach().requires_grad_();
  optim::RMSprop optimizer({first}, {.lr = 0.1, .momentum = 0.5});
  optimizer.add_param_group({expanded});
  first.set_grad(from_vector<double>({0.5, -1.0}, {2}, {.dtype = kFloat64}));
  optimizer.step();  // first has state now: its square_avg must not move either
  const std::vector<double> square_avg = values_of(optimizer.state(first)->square_avg);
  expanded.set_grad(ones({2}, {.dtype = kFloat64}));
  const std::vector<double> before = values_of(first);
  const std::string message = error_of([&] { optimizer.step(); });
  CHECK(message.find("RMSprop: parameter 0 of group 1 (shape [2], strides [0]) is expanded") != std::string::npos);
  CHECK(values_of(first) == before);
  CHECK(optimizer.state(first)->step == 1);
  CHECK(values_of(optimizer.state(first)->square_avg) == square_avg);
  CHECK(optimizer.state(expanded) == nullptr);
}

TEST_CASE("RMSprop reads a gradient that partly overlaps its parameter before writing the parameter") {
  // PyTorch's addcdiv_ refuses such a gradient; ember's update computes the whole direction first,
  // so the step is the one a separate copy of the gradient gives.
  Tensor base = from_vector<float>({1.0f, 2.0f, 3.0f, 4.0f});
  Tensor param = base.narrow(0, 0, 3).detach().requires_grad_();
  Tensor copy = from_vector<float>({1.0f, 2.0f, 3.0f}).requires_grad_();
  optim::RMSprop overlapping({param}, {.lr = 0.1, .weight_decay = 0.1});
  optim::RMSprop separate({copy}, {.lr = 0.1, .weight_decay = 0.1});
  param.set_grad(base.narrow(0, 1, 3));
  copy.set_grad(from_vector<float>({2.0f, 3.0f, 4.0f}));
  overlapping.step();
  separate.step();
  CHECK(param.to_vector<float>() == copy.to_vector<float>());
}

TEST_CASE("RMSprop makes the momentum and centered buffers when those options are turned on later") {
  const Problem problem;
  std::vector<Tensor> params = problem.make_params(kFloat64);
  optim::RMSprop optimizer(params, {.lr = 0.01});
  RmspropReference reference(problem.initial[0]);
  optim::RMSpropOptions options{.lr = 0.01};
  for (int step = 0; step < 4; ++step) {
    if (step == 2) {  // PyTorch would raise KeyError: the buffers start from zero here
      options.momentum = 0.5;
      options.centered = true;
      optimizer.param_groups()[0].options = options;
    }
    problem.set_grads(params, step);
    optimizer.step();
    reference.step(Problem::grad(0, 6, step), options);
  }
  check_close(params[0], reference.param, 1e-12);
  check_close(optimizer.state(params[0])->grad_avg, reference.grad_avg, 1e-12);
}

}  // namespace test_optim_rmsprop
