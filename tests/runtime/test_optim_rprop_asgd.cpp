// optim::Rprop and optim::ASGD against float64 loops of PyTorch's _single_tensor_rprop and
// _single_tensor_asgd: sign flips and step-size bounds, averaging from t0 on, weight decay,
// maximize, state-dict round trips and option errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "error_of.h"
#include "optim_reference.h"
#include "runtime/ember.h"

namespace test_optim_rprop_asgd {

using namespace ember;
using ember::optim_reference::check_close;
using ember::optim_reference::Problem;
using ember::optim_reference::values_of;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;

namespace {

struct RpropReference {
  std::vector<double> param, prev, step_size;
  RpropReference(std::vector<double> initial, double lr)
      : param(std::move(initial)), prev(param.size(), 0.0), step_size(param.size(), lr) {}

  void step(const std::vector<double>& gradient, const optim::RpropOptions& options) {
    const auto [etaminus, etaplus] = options.etas;
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = options.maximize ? -gradient[i] : gradient[i];
      const double product = grad * prev[i];
      const double factor = product > 0.0 ? etaplus : (product < 0.0 ? etaminus : 1.0);
      step_size[i] = std::clamp(step_size[i] * factor, options.step_sizes.first, options.step_sizes.second);
      if (factor == etaminus) grad = 0.0;  // the sign flipped: no move, and no flip seen next step
      param[i] -= static_cast<double>((grad > 0.0) - (grad < 0.0)) * step_size[i];
      prev[i] = grad;
    }
  }
};

struct AsgdReference {
  std::vector<double> param, ax;
  int64_t step_count = 0;
  double eta, mu = 1.0;
  AsgdReference(std::vector<double> initial, double lr) : param(std::move(initial)), ax(param.size(), 0.0), eta(lr) {}

  void step(const std::vector<double>& gradient, const optim::ASGDOptions& options) {
    ++step_count;
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = options.maximize ? -gradient[i] : gradient[i];
      grad += options.weight_decay * param[i];
      param[i] *= 1.0 - options.lambd * eta;
      param[i] += -eta * grad;
      ax[i] = mu == 1.0 ? param[i] : ax[i] + (param[i] - ax[i]) * mu;
    }
    eta = options.lr / std::pow(1.0 + options.lambd * options.lr * static_cast<double>(step_count), options.alpha);
    mu = 1.0 / std::max(1.0, static_cast<double>(step_count) - options.t0);
  }
};

// Runs `steps` steps of Problem's gradients from step `first` on.
template <typename Optimizer>
void run_steps(const Problem& problem, std::vector<Tensor>& params, Optimizer& optimizer, int first, int steps) {
  for (int step = first; step < first + steps; ++step) {
    problem.set_grads(params, step);
    optimizer.step();
  }
}

}  // namespace

TEST_CASE("Rprop matches PyTorch's formulas in float64 over 8 steps, with sign flips and both step-size bounds") {
  const Problem problem;
  for (const bool maximize : {false, true}) {
    INFO("maximize ", maximize);
    // Bounds close to lr, so that growing and shrinking step sizes hit both.
    const optim::RpropOptions options{
        .lr = 0.01, .etas = {0.5, 1.2}, .step_sizes = {0.004, 0.015}, .maximize = maximize};
    std::vector<Tensor> params = problem.make_params(kFloat64);
    optim::Rprop optimizer(params, options);
    std::vector<RpropReference> reference{{problem.initial[0], 0.01}, {problem.initial[1], 0.01}};
    for (int step = 0; step < 8; ++step) {
      problem.set_grads(params, step);
      optimizer.step();
      for (size_t p = 0; p < params.size(); ++p) reference[p].step(values_of(params[p].grad()), options);
    }
    for (size_t p = 0; p < params.size(); ++p) {
      INFO("parameter ", p);
      check_close(params[p], reference[p].param, 1e-14);
      const optim::RpropParamState* state = optimizer.state(params[p]);
      REQUIRE(state != nullptr);
      CHECK(state->step == 8);
      check_close(state->prev, reference[p].prev, 1e-14);
      check_close(state->step_size, reference[p].step_size, 1e-14);
    }
  }
}

TEST_CASE("Rprop by hand: a sign flip halves the step size, skips the move and forgets the gradient") {
  Tensor param = from_vector<double>({1.0}, {1}, {.dtype = kFloat64}).requires_grad_();
  optim::Rprop optimizer({param}, {.lr = 0.01});
  const std::vector<std::pair<double, double>> grads_and_params = {
      {2.0, 0.99},     // first step: factor 1, p -= 0.01
      {-3.0, 0.99},    // flip: step size 0.005, gradient zeroed, p stays
      {-1.0, 0.995},   // prev is 0: factor 1, p += 0.005
      {-4.0, 1.001}};  // same sign: step size 0.006
  for (const auto& [grad, expected] : grads_and_params) {
    param.set_grad(from_vector<double>({grad}, {1}, {.dtype = kFloat64}));
    optimizer.step();
    CHECK(param.item() == doctest::Approx(expected).epsilon(1e-15));
  }
  CHECK(values_of(optimizer.state(param)->step_size)[0] == doctest::Approx(0.006).epsilon(1e-15));
  CHECK(values_of(optimizer.state(param)->prev)[0] == -4.0);
}

TEST_CASE("ASGD matches PyTorch's formulas in float64 over 7 steps, crossing t0, with weight decay and maximize") {
  const Problem problem;
  for (const bool maximize : {false, true})
    for (const double weight_decay : {0.0, 0.1}) {
      INFO("maximize ", maximize, ", weight_decay ", weight_decay);
      // t0 = 2: mu is 1 for steps 1 to 3 (ax copies p), then 1/2, 1/3, ... (ax averages).
      const optim::ASGDOptions options{
          .lr = 0.05, .lambd = 0.1, .alpha = 0.75, .t0 = 2.0, .weight_decay = weight_decay, .maximize = maximize};
      std::vector<Tensor> params = problem.make_params(kFloat64);
      optim::ASGD optimizer(params, options);
      std::vector<AsgdReference> reference{{problem.initial[0], 0.05}, {problem.initial[1], 0.05}};
      for (int step = 0; step < 7; ++step) {
        problem.set_grads(params, step);
        optimizer.step();
        for (size_t p = 0; p < params.size(); ++p) reference[p].step(values_of(params[p].grad()), options);
      }
      for (size_t p = 0; p < params.size(); ++p) {
        INFO("parameter ", p);
        check_close(params[p], reference[p].param, 1e-13);
        const optim::ASGDParamState* state = optimizer.state(params[p]);
        REQUIRE(state != nullptr);
        CHECK(state->step == 7);
        CHECK(state->eta == doctest::Approx(reference[p].eta).epsilon(1e-15));
        CHECK(state->mu == doctest::Approx(0.2).epsilon(1e-15));  // 1 / (7 - 2)
        check_close(state->ax, reference[p].ax, 1e-13);
      }
      // The average differs from the parameter once averaging began.
      CHECK(values_of(optimizer.state(params[0])->ax) != values_of(params[0]));
    }
}

TEST_CASE("ASGD in float32 follows the float64 formulas to float32 rounding") {
  const Problem problem;
  const optim::ASGDOptions options{.lr = 0.05, .lambd = 0.1, .t0 = 1.0, .weight_decay = 0.05};
  std::vector<Tensor> params = problem.make_params(kFloat32);
  optim::ASGD optimizer(params, options);
  std::vector<AsgdReference> reference{{problem.initial[0], 0.05}, {problem.initial[1], 0.05}};
  for (int step = 0; step < 5; ++step) {
    problem.set_grads(params, step);
    optimizer.step();
    for (size_t p = 0; p < params.size(); ++p)
      reference[p].step(Problem::grad(p, problem.initial[p].size(), step), options);
  }
  for (size_t p = 0; p < params.size(); ++p) {
    check_close(params[p], reference[p].param, 1e-5);
    check_close(optimizer.state(params[p])->ax, reference[p].ax, 1e-5);
  }
}

// Steps 3 times, saves, loads into a fresh optimizer on copies of the parameters, steps 3 more:
// the same parameters and state as 6 uninterrupted steps.
template <typename Optimizer>
void check_round_trip(const typename Optimizer::Options& options) {
  const Problem problem;
  std::vector<Tensor> straight = problem.make_params(kFloat64);
  Optimizer uninterrupted(straight, options);
  run_steps(problem, straight, uninterrupted, 0, 6);

  std::vector<Tensor> first = problem.make_params(kFloat64);
  Optimizer before(first, options);
  run_steps(problem, first, before, 0, 3);
  const optim::OptimizerState saved = before.state_dict();
  std::vector<Tensor> resumed;
  for (const Tensor& param : first) resumed.push_back(param.detach().clone().requires_grad_());
  Optimizer after(resumed, typename Optimizer::Options{});  // defaults: the loaded options must replace them
  after.load_state_dict(saved);
  run_steps(problem, resumed, after, 3, 3);
  for (size_t p = 0; p < straight.size(); ++p) CHECK(values_of(resumed[p]) == values_of(straight[p]));
  const optim::OptimizerState expected = uninterrupted.state_dict(), actual = after.state_dict();
  CHECK(actual.scalars.keys() == expected.scalars.keys());
  for (const auto& [key, value] : expected.scalars) CHECK(actual.scalars.at(key) == value);
  for (const auto& [key, tensor] : expected.tensors) CHECK(values_of(actual.tensors.at(key)) == values_of(tensor));
}

TEST_CASE("Rprop and ASGD state dicts hold PyTorch's state and continue exactly where they stopped") {
  check_round_trip<optim::Rprop>({.lr = 0.02, .etas = {0.4, 1.5}, .step_sizes = {1e-3, 0.05}, .maximize = true});
  check_round_trip<optim::ASGD>({.lr = 0.05, .lambd = 0.1, .alpha = 0.5, .t0 = 1.0, .weight_decay = 0.1});
  Tensor param = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  optim::ASGD asgd({param});
  param.set_grad(from_vector<double>({1.0, -1.0}, {2}, {.dtype = kFloat64}));
  asgd.step();
  CHECK(asgd.state_dict().scalars.contains("state.0.eta"));
  CHECK(asgd.state_dict().scalars.contains("state.0.mu"));
  CHECK(asgd.state_dict().tensors.keys() == std::vector<std::string>{"state.0.ax"});
}

TEST_CASE("Rprop and ASGD option errors use PyTorch's words and name the caller's line") {
  Tensor param = from_vector<float>({1.0f}).requires_grad_();
  const int line = __LINE__ + 4;
  // One error_of per line, as check_messages_name_lines expects.
  // clang-format off
  const std::vector<std::string> messages = {
      error_of([&] { optim::Rprop({param}, {.lr = -1.0}); }),
      error_of([&] { optim::Rprop({param}, {.etas = {1.2, 0.5}}); }),
      error_of([&] { optim::Rprop({param}, {.etas = {0.5, 1.0}}); }),
      error_of([&] { optim::Rprop({param}, {.step_sizes = {1.0, 0.1}}); }),
      error_of([&] { optim::ASGD({param}, {.lr = -0.5}); }),
      error_of([&] { optim::ASGD({param}, {.weight_decay = -1e-3}); })};
  // clang-format on
  check_messages_name_lines(messages,
                            {"Rprop: Invalid learning rate: -1", "Rprop: Invalid eta values: 1.2, 0.5",
                             "Rprop: Invalid eta values: 0.5, 1", "Rprop: Invalid step_sizes values: 1, 0.1",
                             "ASGD: Invalid learning rate: -0.5", "ASGD: Invalid weight_decay value: -0.001"},
                            line);
}

}  // namespace test_optim_rprop_asgd
