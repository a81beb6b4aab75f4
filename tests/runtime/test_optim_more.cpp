// Adamax, NAdam, RAdam and Adadelta, and maximize for RMSprop and Adagrad, against float64 loops of
// PyTorch 2.x's _single_tensor_* algorithms (torch/optim/adamax.py, nadam.py, radam.py,
// adadelta.py), written element by element here: two parameter groups with different options,
// both weight decay forms, maximize, and a parameter whose gradient is absent in some steps.
// Also: a state_dict round trip resumes exactly, and the option errors use PyTorch's words; and
// CyclicLR's rates and momenta against the closed form of each mode.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "error_of.h"
#include "optim_reference.h"
#include "runtime/ember.h"

namespace test_optim_more {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;
using optim_reference::Problem;

namespace {

using Buffers = std::vector<std::pair<std::string, const std::vector<double>*>>;
using Scalars = std::vector<std::pair<std::string, double>>;

// torch.lerp as ATen computes it: from the nearer end, so the weight's rounding matters least.
double lerp(double start, double end, double weight) {
  return weight < 0.5 ? start + weight * (end - start) : end - (end - start) * (1.0 - weight);
}

struct AdamaxReference {
  std::vector<double> param, exp_avg, exp_inf;
  int64_t step = 0;
  explicit AdamaxReference(std::vector<double> initial)
      : param(std::move(initial)), exp_avg(param.size(), 0.0), exp_inf(param.size(), 0.0) {}
  void update(const std::vector<double>& gradient, const optim::AdamaxOptions& options) {
    ++step;
    const double clr = options.lr / (1.0 - std::pow(options.betas.first, static_cast<double>(step)));
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = options.maximize ? -gradient[i] : gradient[i];
      if (options.weight_decay != 0.0) grad += options.weight_decay * param[i];
      exp_avg[i] = lerp(exp_avg[i], grad, 1.0 - options.betas.first);
      exp_inf[i] = std::max(exp_inf[i] * options.betas.second, std::abs(grad) + options.eps);
      param[i] += -clr * exp_avg[i] / exp_inf[i];
    }
  }
  Buffers buffers() const { return {{"exp_avg", &exp_avg}, {"exp_inf", &exp_inf}}; }
  Scalars scalars() const { return {{"step", static_cast<double>(step)}}; }
};

struct NAdamReference {
  std::vector<double> param, exp_avg, exp_avg_sq;
  int64_t step = 0;
  double mu_product = 1.0;
  explicit NAdamReference(std::vector<double> initial)
      : param(std::move(initial)), exp_avg(param.size(), 0.0), exp_avg_sq(param.size(), 0.0) {}
  void update(const std::vector<double>& gradient, const optim::NAdamOptions& options) {
    ++step;
    const double t = static_cast<double>(step), beta1 = options.betas.first, beta2 = options.betas.second;
    const double bias_correction2 = 1.0 - std::pow(beta2, t);
    const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, t * options.momentum_decay));
    const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (t + 1.0) * options.momentum_decay));
    mu_product *= mu;
    const double mu_product_next = mu_product * mu_next;
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = options.maximize ? -gradient[i] : gradient[i];
      if (options.weight_decay != 0.0) {
        if (options.decoupled_weight_decay)
          param[i] *= 1.0 - options.lr * options.weight_decay;
        else
          grad += options.weight_decay * param[i];
      }
      exp_avg[i] = lerp(exp_avg[i], grad, 1.0 - beta1);
      exp_avg_sq[i] = exp_avg_sq[i] * beta2 + (1.0 - beta2) * grad * grad;
      const double denom = std::sqrt(exp_avg_sq[i] / bias_correction2) + options.eps;
      param[i] += (-options.lr * (1.0 - mu) / (1.0 - mu_product)) * grad / denom;
      param[i] += (-options.lr * mu_next / (1.0 - mu_product_next)) * exp_avg[i] / denom;
    }
  }
  Buffers buffers() const { return {{"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq}}; }
  Scalars scalars() const { return {{"step", static_cast<double>(step)}, {"mu_product", mu_product}}; }
};

struct RAdamReference {
  std::vector<double> param, exp_avg, exp_avg_sq;
  int64_t step = 0;
  int rectified_steps = 0;  // how many steps took the rectified update, so a test knows both ran
  explicit RAdamReference(std::vector<double> initial)
      : param(std::move(initial)), exp_avg(param.size(), 0.0), exp_avg_sq(param.size(), 0.0) {}
  void update(const std::vector<double>& gradient, const optim::RAdamOptions& options) {
    ++step;
    const double t = static_cast<double>(step), beta1 = options.betas.first, beta2 = options.betas.second;
    const double bias_correction1 = 1.0 - std::pow(beta1, t), bias_correction2 = 1.0 - std::pow(beta2, t);
    const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
    const double rho_t = rho_inf - 2.0 * t * std::pow(beta2, t) / bias_correction2;
    if (rho_t > 5.0) ++rectified_steps;
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = options.maximize ? -gradient[i] : gradient[i];
      if (options.weight_decay != 0.0) {
        if (options.decoupled_weight_decay)
          param[i] *= 1.0 - options.lr * options.weight_decay;
        else
          grad += options.weight_decay * param[i];
      }
      exp_avg[i] = lerp(exp_avg[i], grad, 1.0 - beta1);
      exp_avg_sq[i] = exp_avg_sq[i] * beta2 + (1.0 - beta2) * grad * grad;
      const double corrected = exp_avg[i] / bias_correction1;
      if (rho_t > 5.0) {
        const double rect =
            std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
        const double adaptive = std::sqrt(bias_correction2) / (std::sqrt(exp_avg_sq[i]) + options.eps);
        param[i] -= corrected * options.lr * adaptive * rect;
      } else {
        param[i] -= corrected * options.lr;
      }
    }
  }
  Buffers buffers() const { return {{"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq}}; }
  Scalars scalars() const { return {{"step", static_cast<double>(step)}}; }
};

struct AdadeltaReference {
  std::vector<double> param, square_avg, acc_delta;
  int64_t step = 0;
  explicit AdadeltaReference(std::vector<double> initial)
      : param(std::move(initial)), square_avg(param.size(), 0.0), acc_delta(param.size(), 0.0) {}
  void update(const std::vector<double>& gradient, const optim::AdadeltaOptions& options) {
    ++step;
    for (size_t i = 0; i < param.size(); ++i) {
      double grad = options.maximize ? -gradient[i] : gradient[i];
      if (options.weight_decay != 0.0) grad += options.weight_decay * param[i];
      square_avg[i] = square_avg[i] * options.rho + (1.0 - options.rho) * grad * grad;
      const double std_dev = std::sqrt(square_avg[i] + options.eps);
      const double delta = std::sqrt(acc_delta[i] + options.eps) / std_dev * grad;
      acc_delta[i] = acc_delta[i] * options.rho + (1.0 - options.rho) * delta * delta;
      param[i] -= options.lr * delta;
    }
  }
  Buffers buffers() const { return {{"square_avg", &square_avg}, {"acc_delta", &acc_delta}}; }
  Scalars scalars() const { return {{"step", static_cast<double>(step)}}; }
};

constexpr int kSteps = 12;
// The second parameter has no gradient at these steps: it keeps its value and state, as PyTorch
// skips it, and its step count falls behind the first's.
bool second_absent(int step) { return step == 3 || step == 8; }

void set_step_grads(const Problem& problem, const std::vector<Tensor>& params, int step) {
  for (size_t p = 0; p < params.size(); ++p) {
    if (p == 1 && second_absent(step)) continue;
    Tensor(params[p]).set_grad(from_vector<double>(Problem::grad(p, problem.initial[p].size(), step), problem.shapes[p],
                                                   {.dtype = params[p].dtype()}));
  }
}

// Runs `Optimizer` (one group per parameter, with `first` and `second`) and the reference side by
// side, comparing the parameters after every step and the state_dict's buffers and counters at
// the end. Returns the references for checks of their own.
template <typename Optimizer, typename Reference>
std::vector<Reference> check_against_reference(const typename Optimizer::Options& first,
                                               const typename Optimizer::Options& second, DType dtype,
                                               double tolerance) {
  const Problem problem;
  const std::vector<Tensor> params = problem.make_params(dtype);
  Optimizer optimizer({params[0]}, first);
  optimizer.add_param_group({params[1]}, second);
  std::vector<Reference> references{Reference(problem.initial[0]), Reference(problem.initial[1])};
  const std::vector<typename Optimizer::Options> options{first, second};
  for (int step = 0; step < kSteps; ++step) {
    INFO("step ", step);
    optimizer.zero_grad();
    set_step_grads(problem, params, step);
    optimizer.step();
    for (size_t p = 0; p < params.size(); ++p) {
      if (p == 1 && second_absent(step)) continue;
      references[p].update(Problem::grad(p, problem.initial[p].size(), step), options[p]);
    }
    for (size_t p = 0; p < params.size(); ++p) optim_reference::check_close(params[p], references[p].param, tolerance);
  }
  const optim::OptimizerState state = optimizer.state_dict();
  for (size_t p = 0; p < params.size(); ++p) {
    for (const auto& [name, values] : references[p].buffers()) {
      const std::string key = fmt::format("state.{}.{}", p, name);
      INFO(key);
      const Tensor* found = state.tensors.find(key);
      REQUIRE(found != nullptr);
      optim_reference::check_close(*found, *values, tolerance);
    }
    for (const auto& [name, value] : references[p].scalars()) {
      const std::string key = fmt::format("state.{}.{}", p, name);
      INFO(key);
      const double* found = state.scalars.find(key);
      REQUIRE(found != nullptr);
      CHECK(*found == doctest::Approx(value).epsilon(1e-14));
    }
  }
  CHECK(references[1].step == kSteps - 2);
  return references;
}

// Steps 0..kSteps uninterrupted against: steps 0..half, state_dict, a new optimizer (default
// options) on copies of the parameters loads it, steps half..kSteps. Equal to the last bit.
template <typename Optimizer>
void check_resume(const typename Optimizer::Options& first, const typename Optimizer::Options& second) {
  const Problem problem;
  auto run = [&](Optimizer& optimizer, const std::vector<Tensor>& params, int from, int to) {
    for (int step = from; step < to; ++step) {
      optimizer.zero_grad();
      set_step_grads(problem, params, step);
      optimizer.step();
    }
  };
  const std::vector<Tensor> straight = problem.make_params(kFloat64);
  Optimizer uninterrupted({straight[0]}, first);
  uninterrupted.add_param_group({straight[1]}, second);
  run(uninterrupted, straight, 0, kSteps);

  const std::vector<Tensor> before = problem.make_params(kFloat64);
  Optimizer saved({before[0]}, first);
  saved.add_param_group({before[1]}, second);
  run(saved, before, 0, kSteps / 2);
  const optim::OptimizerState state = saved.state_dict();
  std::vector<Tensor> after;
  for (const Tensor& param : before) after.push_back(param.detach().clone().requires_grad_());
  Optimizer resumed({after[0]});
  resumed.add_param_group({after[1]});
  resumed.load_state_dict(state);
  run(resumed, after, kSteps / 2, kSteps);
  for (size_t p = 0; p < after.size(); ++p)
    CHECK(optim_reference::values_of(after[p]) == optim_reference::values_of(straight[p]));
  CHECK(resumed.state_dict().scalars.keys() == uninterrupted.state_dict().scalars.keys());
  CHECK(resumed.state_dict().tensors.keys() == uninterrupted.state_dict().tensors.keys());
}

}  // namespace

TEST_CASE("Adamax follows PyTorch's algorithm: two groups, weight decay, maximize, an absent gradient") {
  const optim::AdamaxOptions first{.lr = 0.05, .betas = {0.8, 0.95}, .eps = 1e-3, .weight_decay = 0.1};
  const optim::AdamaxOptions second{.lr = 0.02, .eps = 0.5, .maximize = true};
  check_against_reference<optim::Adamax, AdamaxReference>(first, second, kFloat64, 1e-12);
  check_against_reference<optim::Adamax, AdamaxReference>(first, second, kFloat32, 1e-5);
  check_resume<optim::Adamax>(first, second);
}

TEST_CASE("NAdam follows PyTorch's algorithm: coupled and decoupled weight decay, maximize, mu_product") {
  const optim::NAdamOptions first{
      .lr = 0.03, .betas = {0.85, 0.99}, .eps = 1e-6, .weight_decay = 0.2, .momentum_decay = 0.05};
  const optim::NAdamOptions second{.lr = 0.01, .weight_decay = 0.3, .decoupled_weight_decay = true, .maximize = true};
  check_against_reference<optim::NAdam, NAdamReference>(first, second, kFloat64, 1e-12);
  check_against_reference<optim::NAdam, NAdamReference>(first, second, kFloat32, 1e-5);
  check_resume<optim::NAdam>(first, second);
}

TEST_CASE("RAdam follows PyTorch's algorithm on both sides of rho_t > 5, with both weight decay forms") {
  const optim::RAdamOptions first{.lr = 0.04, .betas = {0.8, 0.99}, .eps = 1e-6, .weight_decay = 0.15};
  const optim::RAdamOptions second{.lr = 0.02, .weight_decay = 0.25, .decoupled_weight_decay = true, .maximize = true};
  const auto references = check_against_reference<optim::RAdam, RAdamReference>(first, second, kFloat64, 1e-12);
  for (const RAdamReference& reference : references) {  // both updates were exercised
    CHECK(reference.rectified_steps > 0);
    CHECK(reference.rectified_steps < reference.step);
  }
  check_against_reference<optim::RAdam, RAdamReference>(first, second, kFloat32, 1e-5);
  check_resume<optim::RAdam>(first, second);
  for (int64_t step = 1; step <= 10; ++step) {  // rho_t for beta2 = 0.999 passes 5 between steps 5 and 6
    CAPTURE(step);
    CHECK(optim::RAdam::rectified({}, step) == (step >= 6));
  }
}

TEST_CASE("Adadelta follows PyTorch's algorithm: two groups, weight decay, maximize, an absent gradient") {
  const optim::AdadeltaOptions first{.lr = 0.5, .rho = 0.8, .eps = 1e-4, .weight_decay = 0.1};
  const optim::AdadeltaOptions second{.rho = 0.95, .maximize = true};
  check_against_reference<optim::Adadelta, AdadeltaReference>(first, second, kFloat64, 1e-12);
  check_against_reference<optim::Adadelta, AdadeltaReference>(first, second, kFloat32, 1e-5);
  check_resume<optim::Adadelta>(first, second);
}

TEST_CASE("RMSprop and Adagrad with maximize ascend: PyTorch negates the gradient before weight decay") {
  const Problem problem;
  for (const bool centered : {false, true}) {
    CAPTURE(centered);
    const std::vector<Tensor> params = problem.make_params(kFloat64);
    const optim::RMSpropOptions options{
        .lr = 0.01, .weight_decay = 0.1, .momentum = 0.5, .centered = centered, .maximize = true};
    optim::RMSprop optimizer(params, options);
    std::vector<optim_reference::RmspropReference> references{optim_reference::RmspropReference(problem.initial[0]),
                                                              optim_reference::RmspropReference(problem.initial[1])};
    for (int step = 0; step < kSteps; ++step) {
      optimizer.zero_grad();
      problem.set_grads(params, step);
      optimizer.step();
      for (size_t p = 0; p < params.size(); ++p) {
        std::vector<double> negated = Problem::grad(p, problem.initial[p].size(), step);
        for (double& value : negated) value = -value;
        references[p].step(negated, options);
        optim_reference::check_close(params[p], references[p].param, 1e-12);
      }
    }
  }
  const std::vector<Tensor> params = problem.make_params(kFloat64);
  const optim::AdagradOptions options{.lr = 0.1, .lr_decay = 0.05, .weight_decay = 0.2, .maximize = true};
  optim::Adagrad optimizer(params, options);
  std::vector<optim_reference::AdagradReference> references{optim_reference::AdagradReference(problem.initial[0], 0.0),
                                                            optim_reference::AdagradReference(problem.initial[1], 0.0)};
  for (int step = 0; step < kSteps; ++step) {
    optimizer.zero_grad();
    problem.set_grads(params, step);
    optimizer.step();
    for (size_t p = 0; p < params.size(); ++p) {
      std::vector<double> negated = Problem::grad(p, problem.initial[p].size(), step);
      for (double& value : negated) value = -value;
      references[p].step(negated, options);
      optim_reference::check_close(params[p], references[p].param, 1e-12);
    }
  }
  // maximize is saved and restored with the group's other options.
  optim::OptimizerState state = optimizer.state_dict();
  CHECK(state.scalars["param_groups.0.maximize"] == 1.0);
  optim::Adagrad other(problem.make_params(kFloat64));
  other.load_state_dict(state);
  CHECK(other.param_groups()[0].options.maximize);
}

namespace {

// Each options value constructed alone must fail with its message, naming the line of the call.
template <typename Optimizer>
void check_option_errors(const std::vector<std::pair<typename Optimizer::Options, std::string>>& cases) {
  Tensor param = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  for (const auto& [options, expected] : cases) {
    const int line = __LINE__ + 1;
    const std::string message = error_of([&] { Optimizer bad({param}, options); });
    INFO(message);
    CHECK(message.find(expected) != std::string::npos);
    CHECK(names_line(message, line));
  }
  // The same checks guard add_param_group and load_state_dict, which change nothing when refused.
  Optimizer optimizer({param});
  Tensor other = from_vector<float>({3.0f}).requires_grad_();
  const auto& [bad_options, expected] = cases.front();
  CHECK(error_of([&] { optimizer.add_param_group({other}, bad_options); }).find(expected) != std::string::npos);
  CHECK(optimizer.num_param_groups() == 1);
  optim::OptimizerState state = optimizer.state_dict();
  state.scalars["param_groups.0.lr"] = -2.0;
  const std::string message = error_of([&] { optimizer.load_state_dict(state); });
  CHECK(message.find("load_state_dict: param_groups.0: Invalid learning rate: -2") != std::string::npos);
  CHECK(optimizer.get_lr(0) == typename Optimizer::Options{}.lr);
}

}  // namespace

TEST_CASE("the new optimizers' option errors use PyTorch's words and name the caller's line") {
  const double nan = std::nan("");
  check_option_errors<optim::Adamax>({
      {{.lr = -1.0}, "Adamax: Invalid learning rate: -1"},
      {{.eps = -0.5}, "Adamax: Invalid epsilon value: -0.5"},
      {{.betas = {1.0, 0.9}}, "Adamax: Invalid beta parameter at index 0: 1"},
      {{.betas = {0.9, -0.1}}, "Adamax: Invalid beta parameter at index 1: -0.1"},
      {{.weight_decay = -0.01}, "Adamax: Invalid weight_decay value: -0.01"},
      {{.lr = nan}, "Adamax: Invalid learning rate: nan"},
  });
  check_option_errors<optim::NAdam>({
      {{.lr = -1.0}, "NAdam: Invalid learning rate: -1"},
      {{.eps = -0.5}, "NAdam: Invalid epsilon value: -0.5"},
      {{.betas = {-0.1, 0.9}}, "NAdam: Invalid beta parameter at index 0: -0.1"},
      {{.betas = {0.9, 1.0}}, "NAdam: Invalid beta parameter at index 1: 1"},
      {{.weight_decay = -0.01}, "NAdam: Invalid weight_decay value: -0.01"},
      {{.momentum_decay = -0.004}, "NAdam: Invalid momentum_decay value: -0.004"},
  });
  check_option_errors<optim::RAdam>({
      {{.lr = -1.0}, "RAdam: Invalid learning rate: -1"},
      {{.eps = -0.5}, "RAdam: Invalid epsilon value: -0.5"},
      {{.betas = {1.5, 0.9}}, "RAdam: Invalid beta parameter at index 0: 1.5"},
      {{.betas = {0.9, nan}}, "RAdam: Invalid beta parameter at index 1: nan"},
      {{.weight_decay = -0.01}, "RAdam: Invalid weight_decay value: -0.01"},
  });
  check_option_errors<optim::Adadelta>({
      {{.lr = -1.0}, "Adadelta: Invalid learning rate: -1"},
      {{.rho = 1.5}, "Adadelta: Invalid rho value: 1.5"},
      {{.rho = -0.1}, "Adadelta: Invalid rho value: -0.1"},
      {{.eps = -1e-6}, "Adadelta: Invalid epsilon value: -1e-06"},
      {{.weight_decay = -0.01}, "Adadelta: Invalid weight_decay value: -0.01"},
  });
}

TEST_CASE("NAdam's load_state_dict takes mu_product as a real number and refuses a non-finite one") {
  const Problem problem;
  const std::vector<Tensor> params = problem.make_params(kFloat64);
  optim::NAdam optimizer(params);
  problem.set_grads(params, 0);
  optimizer.step();
  optim::OptimizerState state = optimizer.state_dict();
  const double mu_1 = 0.9 * (1.0 - 0.5 * std::pow(0.96, 4e-3));
  CHECK(state.scalars["state.0.mu_product"] == doctest::Approx(mu_1).epsilon(1e-15));
  state.scalars["state.1.mu_product"] = 0.25;  // not a whole number, unlike a step count
  optimizer.load_state_dict(state);
  CHECK(optimizer.state(params[1])->mu_product == 0.25);
  state.scalars["state.1.mu_product"] = std::numeric_limits<double>::infinity();
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { optimizer.load_state_dict(state); });
  CHECK(message.find("NAdam: load_state_dict: 'state.1.mu_product' must be finite, got inf") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(optimizer.state(params[1])->mu_product == 0.25);
}

namespace {

// The fraction of the way from base to max at step `epoch` of a cycle of up + down steps, written
// from the triangle's shape (up the first `up` steps of each cycle, down the rest), not PyTorch's code.
double triangle(int64_t epoch, double up, double down) {
  const double position = std::fmod(static_cast<double>(epoch), up + down);
  return position <= up ? position / up : (up + down - position) / down;
}

}  // namespace

TEST_CASE("CyclicLR's rates and SGD momenta follow the triangle in each mode, per group") {
  struct Mode {
    std::string name;
    std::function<double(int64_t epoch)> scale;  // the closed form of the mode's amplitude
  };
  const std::vector<Mode> modes = {
      {"triangular", [](int64_t) { return 1.0; }},
      {"triangular2", [](int64_t epoch) { return std::pow(0.5, std::floor(static_cast<double>(epoch) / 10.0)); }},
      {"exp_range", [](int64_t epoch) { return std::pow(0.9, static_cast<double>(epoch)); }},
  };
  for (const Mode& mode : modes) {
    CAPTURE(mode.name);
    Tensor first = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
    Tensor second = from_vector<double>({3.0}, {1}, {.dtype = kFloat64}).requires_grad_();
    optim::SGD optimizer({first}, {.lr = 0.5, .momentum = 0.3});
    optimizer.add_param_group({second}, optim::SGDOptions{.lr = 0.7, .momentum = 0.2});
    const std::vector<double> base_lr{0.01, 0.02}, max_lr{0.1, 0.5};
    const std::vector<double> base_momentum{0.8, 0.7}, max_momentum{0.9, 0.95};
    optim::CyclicLR scheduler(optimizer, base_lr, max_lr,
                              {.step_size_up = 4,
                               .step_size_down = 6,
                               .mode = mode.name,
                               .gamma = 0.9,
                               .base_momentum = base_momentum,
                               .max_momentum = max_momentum});
    for (int64_t epoch = 0; epoch <= 25; ++epoch) {
      CAPTURE(epoch);
      if (epoch > 0) scheduler.step();
      const double height = triangle(epoch, 4.0, 6.0) * mode.scale(epoch);
      for (size_t g = 0; g < 2; ++g) {
        const double lr = base_lr[g] + (max_lr[g] - base_lr[g]) * height;
        CHECK(scheduler.get_last_lr()[g] == doctest::Approx(lr).epsilon(1e-13));
        CHECK(optimizer.get_lr(g) == scheduler.get_last_lr()[g]);
        const double momentum = max_momentum[g] - (max_momentum[g] - base_momentum[g]) * height;
        CHECK(optimizer.param_groups()[g].options.momentum == doctest::Approx(momentum).epsilon(1e-13));
      }
    }
  }
}

TEST_CASE("CyclicLR cycles Adam's beta1, takes a custom scale_fn per cycle or per step, and may leave momentum") {
  Tensor param = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
  optim::Adam adam({param}, {.betas = {0.5, 0.99}});
  optim::CyclicLR cyclic(adam, {0.001}, {0.01}, {.step_size_up = 3});
  CHECK(adam.param_groups()[0].options.betas.first == 0.9);  // max_momentum at step 0
  for (int64_t epoch = 1; epoch <= 8; ++epoch) {
    cyclic.step();
    CHECK(adam.param_groups()[0].options.betas.first == doctest::Approx(0.9 - 0.1 * triangle(epoch, 3, 3)));
    CHECK(adam.param_groups()[0].options.betas.second == 0.99);
  }
  for (const std::string scale_mode : {"cycle", "iterations"}) {
    CAPTURE(scale_mode);
    optim::SGD sgd({param}, {.lr = 0.1, .momentum = 0.4});
    const auto scale_fn = [](double x) { return 1.0 / (1.0 + x); };
    optim::CyclicLR custom(sgd, {0.0}, {1.0},
                           {.step_size_up = 2,
                            .step_size_down = 3,
                            .mode = "ignored",
                            .scale_fn = scale_fn,
                            .scale_mode = scale_mode,
                            .cycle_momentum = false});
    for (int64_t epoch = 1; epoch <= 12; ++epoch) {
      custom.step();
      const double argument =
          scale_mode == "cycle" ? std::floor(1.0 + static_cast<double>(epoch) / 5.0) : static_cast<double>(epoch);
      CHECK(sgd.get_lr(0) == doctest::Approx(triangle(epoch, 2, 3) * scale_fn(argument)).epsilon(1e-13));
      CHECK(sgd.param_groups()[0].options.momentum == 0.4);
    }
  }
}

TEST_CASE("CyclicLR's errors name the setting and the caller's line, and a refused step changes nothing") {
  Tensor param = from_vector<double>({1.0}, {1}, {.dtype = kFloat64}).requires_grad_();
  optim::SGD sgd({param}, {.lr = 0.1, .momentum = 0.5});
  optim::Adagrad adagrad({param});
  // One call per line: the messages name those lines.
  // clang-format off
  const int first_line = __LINE__ + 2;
  const std::vector<std::string> messages = {
      error_of([&] { optim::CyclicLR bad(sgd, {0.1}, {1.0}, {.mode = "sawtooth"}); }),
      error_of([&] { optim::CyclicLR bad(adagrad, {0.1}, {1.0}); }),
      error_of([&] { optim::CyclicLR bad(sgd, {0.1, 0.2}, {1.0}); }),
      error_of([&] { optim::CyclicLR bad(sgd, {0.1}, {1.0}, {.step_size_up = 0}); }),
      error_of([&] { optim::CyclicLR bad(sgd, {0.1}, {1.0}, {.step_size_down = -1.0}); }),
      error_of([&] { optim::CyclicLR bad(sgd, {-0.1}, {1.0}); }),
      error_of([&] { optim::CyclicLR bad(sgd, {0.1}, {1.0}, {.max_momentum = {-0.5}}); }),
  };
  // clang-format on
  ember::testing::check_messages_name_lines(
      messages,
      {"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' when no scale_fn is given, got 'sawtooth'",
       "CyclicLR: cycle_momentum needs an optimizer with momentum or beta1",
       "CyclicLR: expected 1 values for base_lr (one per parameter group) or one, got 2",
       "CyclicLR: step_size_up must be positive, got 0", "CyclicLR: step_size_down must be non-negative, got -1",
       "CyclicLR: base_lr of parameter group 0 must be non-negative, got -0.1",
       "CyclicLR: the cycled momentum of parameter group 0: momentum must be non-negative, got -0.5"},
      first_line);
  CHECK(sgd.param_groups()[0].options.momentum == 0.5);  // no refused construction changed it
  CHECK(sgd.get_lr(0) == 0.1);

  // A scale_fn that turns the rate negative: the step is refused, rate and momentum stay.
  optim::CyclicLR cyclic(
      sgd, {0.1}, {1.0},
      {.step_size_up = 2, .scale_fn = [](double step) { return step < 2.0 ? 1.0 : -1.0; }, .scale_mode = "iterations"});
  cyclic.step();
  CHECK(sgd.get_lr(0) == doctest::Approx(0.55));
  const double lr = sgd.get_lr(0), momentum = sgd.param_groups()[0].options.momentum;
  CHECK(error_of([&] { cyclic.step(); }).find("CyclicLR") != std::string::npos);
  CHECK(sgd.get_lr(0) == lr);
  CHECK(sgd.param_groups()[0].options.momentum == momentum);
}

}  // namespace test_optim_more
