// The maximize option of SGD, Adam and AdamW (gradient ascent). PyTorch 1.13 negates the gradient
// before anything else, so a maximizing step is bit for bit the minimizing step on the negated
// gradient: checked on the per-parameter and the multi-tensor paths, plus a float64 closed form, the
// state dict and older states without the option.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "runtime/ember.h"

namespace test_optim_maximize {

using namespace ember;

namespace {

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Tensor>&, bool maximize)>;

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.to(kFloat64).to_vector<double>() == b.to(kFloat64).to_vector<double>();
}

// Steps a maximizing optimizer on grads g and a minimizing one on -g (same start, 5 steps, two
// parameters of different shapes) and compares the parameters and every state buffer bit for bit.
void check_ascent_is_descent_on_negated_grads(const MakeOptimizer& make, DType dtype) {
  manual_seed(7);
  const Tensor w0 = randn({3, 4}).to(dtype);
  const Tensor b0 = randn({5}).to(dtype);
  std::vector<Tensor> ascending{w0.clone().requires_grad_(), b0.clone().requires_grad_()};
  std::vector<Tensor> descending{w0.clone().requires_grad_(), b0.clone().requires_grad_()};
  std::unique_ptr<optim::Optimizer> up = make(ascending, true);
  std::unique_ptr<optim::Optimizer> down = make(descending, false);
  for (int step = 0; step < 5; ++step) {
    for (size_t i = 0; i < ascending.size(); ++i) {
      const Tensor grad = randn(ascending[i].sizes()).to(dtype);
      ascending[i].set_grad(grad.clone());
      descending[i].set_grad(neg(grad));
    }
    up->step();
    down->step();
  }
  for (size_t i = 0; i < ascending.size(); ++i) CHECK(bit_equal(ascending[i], descending[i]));
  const optim::OptimizerState up_state = up->state_dict(), down_state = down->state_dict();
  REQUIRE(up_state.tensors.keys() == down_state.tensors.keys());
  CHECK_FALSE(up_state.tensors.empty());
  for (const auto& [key, tensor] : up_state.tensors) {
    INFO(key);
    CHECK(bit_equal(tensor, down_state.tensors.at(key)));
  }
  // Not a trivial comparison: the parameters moved.
  CHECK_FALSE(bit_equal(ascending[0], w0));
}

}  // namespace

TEST_CASE("maximize: SGD, Adam and AdamW step up the gradient exactly as down the negated one") {
  for (bool foreach : {true, false}) {
    for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
      CAPTURE(foreach);
      CAPTURE(dtype);
      check_ascent_is_descent_on_negated_grads(
          [&](const std::vector<Tensor>& params, bool maximize) {
            return std::make_unique<optim::SGD>(
                params, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.2, .weight_decay = 0.01,
                                          .maximize = maximize, .foreach = foreach});
          },
          dtype);
      check_ascent_is_descent_on_negated_grads(
          [&](const std::vector<Tensor>& params, bool maximize) {
            return std::make_unique<optim::SGD>(params, optim::SGDOptions{.lr = 0.05, .momentum = 0.8,
                                                                          .weight_decay = 0.1, .nesterov = true,
                                                                          .maximize = maximize, .foreach = foreach});
          },
          dtype);
      check_ascent_is_descent_on_negated_grads(
          [&](const std::vector<Tensor>& params, bool maximize) {
            return std::make_unique<optim::Adam>(
                params, optim::AdamOptions{.lr = 0.01, .weight_decay = 0.05, .amsgrad = true, .maximize = maximize,
                                           .foreach = foreach});
          },
          dtype);
      check_ascent_is_descent_on_negated_grads(
          [&](const std::vector<Tensor>& params, bool maximize) {
            return std::make_unique<optim::AdamW>(
                params, optim::AdamWOptions{.lr = 0.02, .betas = {0.8, 0.95}, .maximize = maximize,
                                            .foreach = foreach});
          },
          dtype);
    }
  }
}

TEST_CASE("maximize: the first steps climb, matching PyTorch's formulas in float64") {
  // torch.optim.SGD([p], lr=0.1, maximize=True) with p = 1, grad 2: p = 1 + 0.1 * 2.
  Tensor p = from_vector<double>({1.0}).requires_grad_();
  p.set_grad(from_vector<double>({2.0}));
  optim::SGD sgd({p}, {.lr = 0.1, .maximize = true});
  sgd.step();
  CHECK(p.to_vector<double>()[0] == 1.0 + 0.1 * 2.0);
  // Adam's first step with maximize: p + lr * g / (|g| + eps) (both bias corrections cancel).
  Tensor q = from_vector<double>({0.5, -0.25}).requires_grad_();
  q.set_grad(from_vector<double>({-3.0, 0.001}));
  optim::Adam adam({q}, {.lr = 0.01, .eps = 1e-3, .maximize = true});
  adam.step();
  const std::vector<double> climbed = q.to_vector<double>();
  CHECK(climbed[0] == doctest::Approx(0.5 + 0.01 * -3.0 / (3.0 + 1e-3)).epsilon(1e-14));
  CHECK(climbed[1] == doctest::Approx(-0.25 + 0.01 * 0.001 / (0.001 + 1e-3)).epsilon(1e-14));
}

TEST_CASE("maximize is saved with the options, and a state saved before it existed loads it as false") {
  Tensor p = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  optim::AdamW maximizing({p}, {.lr = 0.01, .maximize = true});
  const optim::OptimizerState state = maximizing.state_dict();
  REQUIRE(state.scalars.find("param_groups.0.maximize") != nullptr);
  CHECK(state.scalars.at("param_groups.0.maximize") == 1.0);

  Tensor q = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  optim::AdamW restored({q}, {.lr = 0.01});
  restored.load_state_dict(state);
  CHECK(restored.param_groups()[0].options.maximize);

  // An older state (no maximize key) loads as PyTorch's __setstate__ does: maximize off.
  optim::OptimizerState older;
  older.tensors = state.tensors;
  for (const auto& [key, value] : state.scalars)
    if (key != "param_groups.0.maximize") older.scalars.insert(key, value);
  restored.load_state_dict(older);
  CHECK_FALSE(restored.param_groups()[0].options.maximize);

  optim::OptimizerState bad = state;
  bad.scalars["param_groups.0.maximize"] = 0.5;
  CHECK_THROWS_WITH_AS(restored.load_state_dict(bad),
                       doctest::Contains("AdamW: load_state_dict: 'param_groups.0.maximize' must be 0 or 1, got 0.5"),
                       Error);
  // SGD's too.
  Tensor r = from_vector<float>({1.0f}).requires_grad_();
  optim::SGD sgd({r}, {.lr = 0.1, .maximize = true});
  CHECK(sgd.state_dict().scalars.at("param_groups.0.maximize") == 1.0);
}

}  // namespace test_optim_maximize
