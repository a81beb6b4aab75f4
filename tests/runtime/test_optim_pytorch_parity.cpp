// Optimizer, scheduler and gradient-clipping behaviour checked against PyTorch 2.x where earlier
// tests left a gap: expected values come from PyTorch's documented algorithms and its source
// (torch/nn/utils/clip_grad.py, aten's linalg_vector_norm and _foreach_norm), computed here in
// float64 loops independent of ember.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/ember.h"

namespace test_optim_pytorch_parity {

using namespace ember;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("clip_grad_norm_ refuses an empty gradient for the norms without an identity, as PyTorch") {
  // PyTorch takes vector_norm (or _foreach_norm) of every gradient. The max behind the infinity
  // norm and the min behind -infinity and p < 0 have no identity, so an empty gradient raises
  // "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does
  // not have an identity" there; ember used to skip it and clip by the other gradients.
  for (const double norm_type : {kInfinity, -kInfinity, -1.0}) {
    CAPTURE(norm_type);
    Tensor empty = zeros({0, 3}, {.dtype = kFloat64}).requires_grad_();
    Tensor full = zeros({2}, {.dtype = kFloat64}).requires_grad_();
    empty.set_grad(zeros({0, 3}, {.dtype = kFloat64}));
    full.set_grad(from_vector<double>({3.0, -4.0}));
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm_({full, empty}, 1.0, norm_type),
                         doctest::Contains("clip_grad_norm_: the gradient of parameter 1 (shape [0, 3]) is empty"), Error);
    CHECK(full.grad().to_vector<double>() == std::vector<double>{3.0, -4.0});  // nothing scaled
    CHECK_THROWS_WITH_AS(nn::utils::get_total_norm({full.grad(), empty.grad()}, norm_type),
                         doctest::Contains("get_total_norm: tensor 1 (shape [0, 3]) is empty"), Error);
  }
  // The norms with an identity take an empty gradient as 0 (a zero count for p = 0), as in PyTorch:
  // the total is vector_norm([vector_norm(g, p) for g in grads], p).
  for (const double norm_type : {0.0, 0.5, 1.0, 2.0, 3.0}) {
    CAPTURE(norm_type);
    Tensor empty = zeros({0}, {.dtype = kFloat64}).requires_grad_();
    Tensor full = zeros({2}, {.dtype = kFloat64}).requires_grad_();
    empty.set_grad(zeros({0}, {.dtype = kFloat64}));
    full.set_grad(from_vector<double>({3.0, -4.0}));
    const double expected =
        norm_type == 0.0 ? 1.0 : std::pow(std::pow(3.0, norm_type) + std::pow(4.0, norm_type), 1.0 / norm_type);
    CHECK(optim::clip_grad_norm_({empty, full}, 1e9, norm_type) == doctest::Approx(expected).epsilon(1e-14));
  }
}

TEST_CASE("an optimizer takes a non-leaf tensor that retains its gradient, as PyTorch does") {
  // torch.optim.Optimizer.add_param_group refuses a parameter only when it is neither a leaf nor
  // retains_grad ("can't optimize a non-leaf Tensor"): a retain_grad()ed intermediate is stepped.
  const std::vector<double> start{0.5, -1.5, 2.0};
  Tensor leaf = from_vector<double>(start).requires_grad_();
  Tensor intermediate = leaf * 3.0;
  CHECK_THROWS_WITH_AS(optim::SGD({intermediate}, {.lr = 0.1}), doctest::Contains("not a leaf"), Error);
  intermediate.retain_grad();
  optim::SGD optimizer({intermediate}, {.lr = 0.1, .momentum = 0.9});
  (intermediate * intermediate).sum().backward();
  optimizer.step();
  // d(sum y^2)/dy = 2y; SGD's first momentum step is y - lr * 2y.
  std::vector<double> expected;
  for (double value : start) expected.push_back(3.0 * value - 0.1 * 2.0 * 3.0 * value);
  const std::vector<double> actual = intermediate.to_vector<double>();
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-15));
  CHECK(leaf.to_vector<double>() == start);  // the leaf below is untouched
}

TEST_CASE("add_param_group takes an empty group, as PyTorch's does, but the constructor needs parameters") {
  // torch.optim refuses an empty list in the constructor ("optimizer got an empty parameter
  // list") but add_param_group appends any group; its rate is then scheduled like the others.
  Tensor param = from_vector<double>({1.0, -2.0}).requires_grad_();
  CHECK_THROWS_WITH_AS(optim::Adam(std::vector<Tensor>{}), doctest::Contains("empty parameter list"), Error);
  optim::Adam optimizer({param}, {.lr = 0.1});
  optimizer.add_param_group({}, optim::AdamOptions{.lr = 0.5});
  REQUIRE(optimizer.num_param_groups() == 2);
  optim::StepLR scheduler(optimizer, 1, 0.5);
  param.set_grad(from_vector<double>({0.25, 4.0}));
  optimizer.step();
  scheduler.step();
  CHECK(optimizer.get_lr(1) == 0.25);
  // The first Adam step moves every element by lr against its gradient's sign (up to eps).
  const std::vector<double> values = param.to_vector<double>();
  CHECK(values[0] == doctest::Approx(0.9).epsilon(1e-7));
  CHECK(values[1] == doctest::Approx(-2.1).epsilon(1e-7));
  const optim::OptimizerState state = optimizer.state_dict();
  CHECK(state.scalars.at("param_groups.1.num_params") == 0.0);
  optimizer.load_state_dict(state);
  CHECK(optimizer.get_lr(1) == 0.25);
}

namespace {

// Three parameters over four steps: a has a gradient every step, b none at step 1 and c none at
// step 0, so their step counts (Adam's bias corrections) and momentum buffers drift apart, and a
// foreach step has to batch a and b apart within one group. Gradients change sign and size.
constexpr int kSteps = 4;
const std::vector<std::vector<double>> kStart{{0.5, -1.25, 2.0}, {0.2, -0.4}, {0.9, -1.6, 0.3}};

bool has_grad(size_t param, int step) { return !((param == 1 && step == 1) || (param == 2 && step == 0)); }

std::vector<double> grad_at(size_t param, int step) {
  std::vector<double> values(kStart[param].size());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(0.9 * static_cast<double>(i) + 1.7 * step + 0.6 * static_cast<double>(param)) + 0.1;
  return values;
}

std::vector<Tensor> make_params() {
  std::vector<Tensor> params;
  for (const std::vector<double>& values : kStart) params.push_back(from_vector<double>(values).requires_grad_());
  return params;
}

void set_grads(const std::vector<Tensor>& params, int step) {
  for (size_t p = 0; p < params.size(); ++p)
    Tensor(params[p]).set_grad(has_grad(p, step) ? from_vector<double>(grad_at(p, step)) : Tensor());
}

void check_params(const std::vector<Tensor>& params, const std::vector<std::vector<double>>& expected) {
  for (size_t p = 0; p < params.size(); ++p) {
    const std::vector<double> actual = params[p].to_vector<double>();
    for (size_t i = 0; i < actual.size(); ++i) {
      INFO("parameter ", p, " element ", i);
      CHECK(actual[i] == doctest::Approx(expected[p][i]).epsilon(1e-13));
    }
  }
}

// torch.optim.Adam / AdamW's _single_tensor_adam for one element, from the documented algorithm.
struct AdamElement {
  double param, exp_avg = 0.0, exp_avg_sq = 0.0, max_exp_avg_sq = 0.0;
  template <typename Options>
  void step(double grad, const Options& o, int64_t t, bool decoupled) {
    if (o.maximize) grad = -grad;
    if (decoupled) param *= 1.0 - o.lr * o.weight_decay;
    else grad += o.weight_decay * param;
    exp_avg = o.betas.first * exp_avg + (1.0 - o.betas.first) * grad;
    exp_avg_sq = o.betas.second * exp_avg_sq + (1.0 - o.betas.second) * grad * grad;
    max_exp_avg_sq = std::max(max_exp_avg_sq, exp_avg_sq);
    const double second = o.amsgrad ? max_exp_avg_sq : exp_avg_sq;
    const double bias1 = 1.0 - std::pow(o.betas.first, static_cast<double>(t));
    const double bias2 = 1.0 - std::pow(o.betas.second, static_cast<double>(t));
    param -= o.lr / bias1 * exp_avg / (std::sqrt(second) / std::sqrt(bias2) + o.eps);
  }
};

// Runs the reference over the schedule: group 0 holds a and b with `first`, group 1 holds c with `second`.
template <typename Options>
std::vector<std::vector<double>> adam_reference(const Options& first, const Options& second, bool decoupled) {
  std::vector<std::vector<AdamElement>> elements(kStart.size());
  std::vector<int64_t> counts(kStart.size(), 0);
  for (size_t p = 0; p < kStart.size(); ++p)
    for (double value : kStart[p]) elements[p].push_back({.param = value});
  for (int step = 0; step < kSteps; ++step) {
    for (size_t p = 0; p < kStart.size(); ++p) {
      if (!has_grad(p, step)) continue;  // skipped: its state and step count stay
      ++counts[p];
      const std::vector<double> grad = grad_at(p, step);
      for (size_t i = 0; i < grad.size(); ++i) elements[p][i].step(grad[i], p < 2 ? first : second, counts[p], decoupled);
    }
  }
  std::vector<std::vector<double>> out(kStart.size());
  for (size_t p = 0; p < kStart.size(); ++p)
    for (const AdamElement& element : elements[p]) out[p].push_back(element.param);
  return out;
}

}  // namespace

TEST_CASE("Adam and AdamW with per-group options and skipped gradients follow PyTorch's per-parameter step counts") {
  for (const bool foreach : {true, false}) {
    CAPTURE(foreach);
    {
      const optim::AdamOptions first{.lr = 0.05, .betas = {0.8, 0.6}, .eps = 1e-3, .weight_decay = 0.1,
                                     .amsgrad = true, .maximize = true, .foreach = foreach};
      const optim::AdamOptions second{.lr = 0.02, .betas = {0.5, 0.9}, .foreach = foreach};
      std::vector<Tensor> params = make_params();
      optim::Adam optimizer({params[0], params[1]}, first);
      optimizer.add_param_group({params[2]}, second);
      for (int step = 0; step < kSteps; ++step) {
        set_grads(params, step);
        optimizer.step();
      }
      check_params(params, adam_reference(first, second, false));
      CHECK(optimizer.state(params[0])->step == 4);
      CHECK(optimizer.state(params[1])->step == 3);
      CHECK(optimizer.state(params[2])->step == 3);
    }
    {
      const optim::AdamWOptions first{.lr = 0.05, .betas = {0.7, 0.5}, .weight_decay = 0.3, .amsgrad = true,
                                      .foreach = foreach};
      const optim::AdamWOptions second{.lr = 0.1, .weight_decay = 0.0, .maximize = true, .foreach = foreach};
      std::vector<Tensor> params = make_params();
      optim::AdamW optimizer({params[0], params[1]}, first);
      optimizer.add_param_group({params[2]}, second);
      for (int step = 0; step < kSteps; ++step) {
        set_grads(params, step);
        optimizer.step();
      }
      check_params(params, adam_reference(first, second, true));
    }
  }
}

TEST_CASE("SGD with per-group options and skipped gradients keeps each momentum buffer as PyTorch does") {
  // _single_tensor_sgd: g = maximize ? -g : g; g += wd * p; buf = g on a parameter's first step
  // with a gradient, else momentum * buf + (1 - dampening) * g; g = nesterov ? g + momentum * buf
  // : buf; p -= lr * g. A parameter without a gradient is left out: its buffer waits.
  const optim::SGDOptions first{.lr = 0.1, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.05, .maximize = true};
  const optim::SGDOptions second{.lr = 0.2, .momentum = 0.5, .weight_decay = 0.01, .nesterov = true};
  std::vector<std::vector<double>> expected = kStart;
  std::vector<std::vector<double>> buffers(kStart.size());
  for (int step = 0; step < kSteps; ++step) {
    for (size_t p = 0; p < kStart.size(); ++p) {
      if (!has_grad(p, step)) continue;
      const optim::SGDOptions& o = p < 2 ? first : second;
      const std::vector<double> grad = grad_at(p, step);
      const bool first_step = buffers[p].empty();
      buffers[p].resize(grad.size());
      for (size_t i = 0; i < grad.size(); ++i) {
        double g = o.maximize ? -grad[i] : grad[i];
        g += o.weight_decay * expected[p][i];
        buffers[p][i] = first_step ? g : o.momentum * buffers[p][i] + (1.0 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * buffers[p][i] : buffers[p][i];
        expected[p][i] -= o.lr * g;
      }
    }
  }
  for (const bool foreach : {true, false}) {
    CAPTURE(foreach);
    std::vector<Tensor> params = make_params();
    optim::SGDOptions first_options = first, second_options = second;
    first_options.foreach = second_options.foreach = foreach;
    optim::SGD optimizer({params[0], params[1]}, first_options);
    optimizer.add_param_group({params[2]}, second_options);
    for (int step = 0; step < kSteps; ++step) {
      set_grads(params, step);
      optimizer.step();
    }
    check_params(params, expected);
  }
}

TEST_CASE("LinearLR with total_iters 0 keeps start_factor, as PyTorch's does") {
  // PyTorch checks only the factors. Its get_lr multiplies by start_factor at epoch 0 and returns
  // the rate unchanged at every epoch past total_iters, so total_iters = 0 holds start_factor * lr.
  Tensor param = from_vector<double>({1.0}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.2});
  optim::LinearLR scheduler(optimizer, 0.5, 1.0, 0);
  CHECK(optimizer.get_lr(0) == 0.2 * 0.5);
  for (int epoch = 1; epoch <= 3; ++epoch) {
    scheduler.step();
    CHECK(optimizer.get_lr(0) == 0.2 * 0.5);
  }
  CHECK_THROWS_WITH_AS(optim::LinearLR(optimizer, 0.5, 1.0, -1),
                       doctest::Contains("LinearLR: total_iters must be non-negative, got -1"), Error);
}

}  // namespace test_optim_pytorch_parity
