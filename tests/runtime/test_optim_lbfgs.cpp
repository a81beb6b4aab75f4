// optim::LBFGS against a float64 host reference of PyTorch's LBFGS (lbfgs_reference.h): the
// iterates on the Rosenbrock function with and without the strong Wolfe line search, convergence
// to its minimum, a quadratic that the history solves in few iterations, state-dict round trips
// and the errors (no closure, bad options, several groups, bad states).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "error_of.h"
#include "lbfgs_reference.h"
#include "runtime/ember.h"
#include "runtime/optim/lbfgs_line_search.h"

namespace test_optim_lbfgs {

using namespace ember;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
namespace reference = ember::lbfgs_reference;

namespace {

double value(const Tensor& tensor) { return tensor.to(kFloat64).item(); }

// Rosenbrock's x and y as two parameters, so that the flat vector spans both.
struct Rosenbrock {
  Tensor x, y;
  explicit Rosenbrock(DType dtype = kFloat64)
      : x(from_vector<double>({-1.5}, {1}, {.dtype = dtype}).requires_grad_()),
        y(from_vector<double>({2.0}, {1}, {.dtype = dtype}).requires_grad_()) {}
  Tensor loss() const {
    const Tensor a = 1.0 - x, b = y - x * x;
    return (a * a + b * b * 100.0).sum();
  }
  optim::LossClosure closure(optim::Optimizer& optimizer) const {
    return [this, &optimizer] {
      optimizer.zero_grad();
      Tensor result = loss();
      result.backward();
      return result;
    };
  }
};

// The defaults stop once grad . d > -1e-9, about 2e-6 from (1, 1) (PyTorch stops there too):
// tighter tolerances let both variants reach the minimum to 1e-6.
optim::LBFGSOptions tight(bool wolfe, int64_t max_iter = 20) {
  return {.max_iter = max_iter,
          .tolerance_grad = 1e-12,
          .tolerance_change = 1e-14,
          .line_search_fn = wolfe ? std::optional<std::string>("strong_wolfe") : std::nullopt};
}
reference::Lbfgs reference_of(const optim::LBFGSOptions& options, reference::Function fn, reference::Vec x) {
  return {.fn = std::move(fn),
          .x = std::move(x),
          .lr = options.lr,
          .max_iter = static_cast<int>(options.max_iter),
          .max_eval = static_cast<int>(options.max_eval.value_or(options.max_iter * 5 / 4)),
          .tolerance_grad = options.tolerance_grad,
          .tolerance_change = options.tolerance_change,
          .history_size = static_cast<size_t>(options.history_size),
          .wolfe = options.line_search_fn.has_value()};
}

// 0.5 * sum_i 2^i (p_i - 1)^2 over 6 elements: condition number 32, minimum at 1.
struct Quadratic {
  Tensor p = from_vector<double>({3, -2, 0.5, 4, 2, -1}, {6}, {.dtype = kFloat64}).requires_grad_();
  Tensor weights = from_vector<double>({1, 2, 4, 8, 16, 32}, {6}, {.dtype = kFloat64});
  static reference::Eval host(const reference::Vec& q) {
    reference::Eval e{0.0, reference::Vec(q.size())};
    for (size_t i = 0; i < q.size(); ++i) {
      const double a = std::pow(2.0, static_cast<double>(i));
      e.f += 0.5 * a * (q[i] - 1) * (q[i] - 1), e.g[i] = a * (q[i] - 1);
    }
    return e;
  }
  double max_error() const {
    double error = 0.0;
    for (double v : p.to_vector<double>()) error = std::max(error, std::abs(v - 1.0));
    return error;
  }
};

}  // namespace

TEST_CASE("LBFGS follows the float64 reference of PyTorch's algorithm step by step on Rosenbrock") {
  for (const bool wolfe : {false, true}) {
    INFO("strong_wolfe ", wolfe);
    const optim::LBFGSOptions options = tight(wolfe, /*max_iter=*/4);
    Rosenbrock problem;
    optim::LBFGS optimizer({problem.x, problem.y}, options);
    reference::Lbfgs expected = reference_of(options, reference::rosenbrock, {-1.5, 2.0});
    for (int step = 0; step < 6; ++step) {
      INFO("step ", step);
      const double loss = value(optimizer.step(problem.closure(optimizer)));
      const double expected_loss = expected.step();
      CHECK(loss == doctest::Approx(expected_loss).epsilon(1e-9));
      CHECK(value(problem.x) == doctest::Approx(expected.x[0]).epsilon(1e-9));
      CHECK(value(problem.y) == doctest::Approx(expected.x[1]).epsilon(1e-9));
      REQUIRE(optimizer.state() != nullptr);
      CHECK(optimizer.state()->func_evals == expected.func_evals);
      CHECK(optimizer.state()->n_iter == expected.n_iter);
      CHECK(optimizer.state()->t == doctest::Approx(expected.t).epsilon(1e-9));
      CHECK(optimizer.state()->old_dirs.size() == expected.old_dirs.size());
    }
  }
}

TEST_CASE("The strong Wolfe line search matches the reference's steps on lines it brackets, extrapolates and zooms") {
  // Wiggly functions have several local minima along a line, so trials rise and fall again; the
  // points and starting steps include lines found to take the rarer branches (a rise at the second
  // bracketing trial, a zoom whose high end moves to the low end).
  const auto wiggly = [](double frequency, double amplitude) -> reference::Function {
    return [=](const reference::Vec& p) {
      return reference::Eval{
          p[0] * p[0] + p[1] * p[1] + amplitude * (std::sin(frequency * p[0]) + std::sin(frequency * p[1])),
          {2 * p[0] + amplitude * frequency * std::cos(frequency * p[0]),
           2 * p[1] + amplitude * frequency * std::cos(frequency * p[1])}};
    };
  };
  int zoomed = 0;
  for (const reference::Function& fn : {reference::Function(reference::rosenbrock), wiggly(5, 2), wiggly(9, 0.5)})
    for (const reference::Vec& x :
         {reference::Vec{-1.5, 2.0}, reference::Vec{0.3, -0.7}, reference::Vec{2.0, 1.0}, reference::Vec{-2.0, -0.6},
          reference::Vec{-1.5, -1.3}, reference::Vec{-2.0, -2.0}, reference::Vec{-2.0, -1.3}})
      for (const double t : {1e-4, 1e-2, 0.3, 1.0, 5.0, 50.0}) {
        INFO("x ", x[0], ", ", x[1], ", t ", t);
        const reference::Eval start = fn(x);
        const reference::Vec d{-start.g[0], -start.g[1]};
        const double gtd = reference::dot(start.g, d);
        const reference::WolfeResult expected = reference::strong_wolfe(fn, x, t, d, start.f, start.g, gtd, 1e-9);
        const auto objective = [&](double step) {
          const reference::Eval e = fn(reference::add(x, step, d));
          return std::pair{e.f, from_vector<double>(e.g, {2}, {.dtype = kFloat64})};
        };
        const optim::detail::LineSearchResult found =
            optim::detail::strong_wolfe(objective, t, from_vector<double>(d, {2}, {.dtype = kFloat64}), start.f,
                                        from_vector<double>(start.g, {2}, {.dtype = kFloat64}), gtd, 1e-9);
        CHECK(found.t == doctest::Approx(expected.t).epsilon(1e-12));
        CHECK(found.loss == doctest::Approx(expected.f).epsilon(1e-12));
        CHECK(found.evaluations == expected.evals);
        zoomed += expected.evals > 2;
      }
  CHECK(zoomed >= 30);  // most lines need more than one trial past the first
}

TEST_CASE("LBFGS minimizes Rosenbrock from (-1.5, 2) to (1, 1) within 1e-6, with and without line search") {
  for (const bool wolfe : {false, true}) {
    INFO("strong_wolfe ", wolfe);
    Rosenbrock problem;
    optim::LBFGS optimizer({problem.x, problem.y}, tight(wolfe));
    for (int step = 0; step < 30; ++step) optimizer.step(problem.closure(optimizer));
    CHECK(std::abs(value(problem.x) - 1.0) < 1e-6);
    CHECK(std::abs(value(problem.y) - 1.0) < 1e-6);
    CHECK(value(problem.loss()) < 1e-12);
  }
}

TEST_CASE("LBFGS in float32 follows the float64 iterates to float32 rounding and still reaches (1, 1)") {
  // The defaults: float32's gradient stops the step near the minimum (max |grad| <= 1e-7 is out
  // of reach, the loss change below 1e-9 is not).
  Rosenbrock problem(kFloat32);
  optim::LBFGS optimizer({problem.x, problem.y}, {.max_iter = 4, .line_search_fn = "strong_wolfe"});
  reference::Lbfgs expected = reference_of(optimizer.options(), reference::rosenbrock, {-1.5, 2.0});
  optimizer.step(problem.closure(optimizer));
  expected.step();
  CHECK(value(problem.x) == doctest::Approx(expected.x[0]).epsilon(1e-4));
  CHECK(value(problem.y) == doctest::Approx(expected.x[1]).epsilon(1e-4));
  for (int step = 0; step < 30; ++step) optimizer.step(problem.closure(optimizer));
  CHECK(std::abs(value(problem.x) - 1.0) < 1e-3);
  CHECK(std::abs(value(problem.y) - 1.0) < 1e-3);
  CHECK(optimizer.state()->d.dtype() == kFloat32);
}

TEST_CASE("LBFGS with history solves an ill-conditioned quadratic in few iterations, as the reference does") {
  for (const int64_t history : {int64_t{1}, int64_t{100}}) {
    INFO("history_size ", history);
    Quadratic problem;
    const optim::LBFGSOptions options{.max_iter = 100,
                                      .max_eval = 200,
                                      .tolerance_grad = 1e-10,
                                      .tolerance_change = 1e-14,
                                      .history_size = history,
                                      .line_search_fn = "strong_wolfe"};
    optim::LBFGS optimizer({problem.p}, options);
    optimizer.step([&] {
      optimizer.zero_grad();
      Tensor loss = ((problem.p - 1.0) * (problem.p - 1.0) * problem.weights).sum() * 0.5;
      loss.backward();
      return loss;
    });
    reference::Lbfgs expected = reference_of(options, Quadratic::host, {3, -2, 0.5, 4, 2, -1});
    expected.step();
    CHECK(optimizer.state()->n_iter == expected.n_iter);
    CHECK(optimizer.state()->func_evals == expected.func_evals);
    if (history == 100) {
      CHECK(optimizer.state()->n_iter <= 20);  // a curvature pair per iteration: near Newton steps
      CHECK(problem.max_error() < 1e-7);
    } else {
      CHECK(optimizer.state()->n_iter > 40);  // one pair: little better than scaled steepest descent
    }
  }
}

TEST_CASE("LBFGS's state dict holds PyTorch's state and a loaded optimizer continues as an uninterrupted one") {
  const optim::LBFGSOptions options = tight(/*wolfe=*/true, /*max_iter=*/3);
  Rosenbrock straight;
  optim::LBFGS uninterrupted({straight.x, straight.y}, options);
  for (int step = 0; step < 4; ++step) uninterrupted.step(straight.closure(uninterrupted));

  Rosenbrock first;
  optim::LBFGS before({first.x, first.y}, options);
  for (int step = 0; step < 2; ++step) before.step(first.closure(before));
  const optim::OptimizerState saved = before.state_dict();
  for (const char* key : {"state.0.func_evals", "state.0.n_iter", "state.0.t", "state.0.H_diag", "state.0.prev_loss",
                          "state.0.ro.0", "param_groups.0.line_search_fn", "param_groups.0.max_eval"})
    CHECK_MESSAGE(saved.scalars.contains(key), key);
  for (const char* key : {"state.0.d", "state.0.prev_flat_grad", "state.0.old_dirs.0", "state.0.old_stps.0"})
    CHECK_MESSAGE(saved.tensors.contains(key), key);
  CHECK(saved.tensors.at("state.0.d").sizes() == Dims{2});  // the flat vector over both parameters

  Rosenbrock resumed;
  resumed.x.detach().copy_(first.x.detach()), resumed.y.detach().copy_(first.y.detach());
  optim::LBFGS after({resumed.x, resumed.y});  // defaults: the loaded options replace them
  after.load_state_dict(saved);
  CHECK(after.options().line_search_fn == std::optional<std::string>("strong_wolfe"));
  for (int step = 0; step < 2; ++step) after.step(resumed.closure(after));
  CHECK(value(resumed.x) == value(straight.x));
  CHECK(value(resumed.y) == value(straight.y));
  const optim::OptimizerState expected = uninterrupted.state_dict(), actual = after.state_dict();
  CHECK(actual.scalars.keys() == expected.scalars.keys());
  for (const auto& [key, number] : expected.scalars) CHECK(actual.scalars.at(key) == number);
  REQUIRE(actual.tensors.keys() == expected.tensors.keys());
  for (const auto& [key, tensor] : expected.tensors)
    CHECK(actual.tensors.at(key).to_vector<double>() == tensor.to_vector<double>());
}

TEST_CASE("LBFGS refuses a step without a closure, bad options and several groups, naming the caller's line") {
  Tensor param = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  Tensor other = from_vector<double>({3.0}, {1}, {.dtype = kFloat64}).requires_grad_();
  optim::LBFGS optimizer({param});
  const int line = __LINE__ + 4;
  // One error_of per line, as check_messages_name_lines expects.
  // clang-format off
  const std::vector<std::string> messages = {
      error_of([&] { optimizer.step(); }),
      error_of([&] { optim::LBFGS({param}, {.lr = -1.0}); }),
      error_of([&] { optim::LBFGS({param}, {.history_size = 0}); }),
      error_of([&] { optim::LBFGS({param}, {.line_search_fn = "backtracking"}); }),
      error_of([&] { optim::LBFGS({param}, {.max_iter = 0}); }),
      error_of([&] { optimizer.add_param_group({other}); }),
      error_of([&] { optimizer.step([&] { return param * 2.0; }); })};
  // clang-format on
  check_messages_name_lines(
      messages,
      {"LBFGS.step: a closure is required", "LBFGS: Invalid learning rate: -1",
       "LBFGS: history_size must be at least 1, got 0", "LBFGS: line_search_fn must be unset or \"strong_wolfe\"",
       "LBFGS: max_iter must be at least 1, got 0", "LBFGS doesn't support per-parameter options (parameter groups)",
       "the closure must return the loss as a one-element tensor, got shape [2]"},
      line);
  CHECK(optimizer.state() == nullptr);  // nothing ran
  CHECK(optimizer.num_param_groups() == 1);
}

TEST_CASE("LBFGS load_state_dict refuses a foreign or inconsistent state and keeps its own") {
  Rosenbrock problem;
  optim::LBFGS optimizer({problem.x, problem.y}, tight(true, 2));
  optimizer.step(problem.closure(optimizer));
  const optim::OptimizerState good = optimizer.state_dict();
  auto refused = [&](optim::OptimizerState state) { return error_of([&] { optimizer.load_state_dict(state); }); };
  optim::OptimizerState extra = good;
  extra.scalars.insert("state.0.momentum", 1.0);
  CHECK(refused(extra).find("unexpected key 'state.0.momentum'") != std::string::npos);
  optim::OptimizerState two_groups = good;
  two_groups.scalars.insert("param_groups.1.num_params", 1.0);
  CHECK(refused(two_groups).find("several parameter groups") != std::string::npos);
  optim::OptimizerState short_d = good;
  short_d.tensors.at("state.0.d") = zeros({3}, {.dtype = kFloat64});
  CHECK(refused(short_d).find("size mismatch for 'state.0.d'") != std::string::npos);
  optim::OptimizerState bad_search = good;
  bad_search.scalars.at("param_groups.0.line_search_fn") = 2.0;
  CHECK(refused(bad_search).find("'param_groups.0.line_search_fn' must be 0 (none) or 1") != std::string::npos);
  CHECK(optimizer.state_dict().scalars.at("state.0.n_iter") == good.scalars.at("state.0.n_iter"));
}

}  // namespace test_optim_lbfgs
