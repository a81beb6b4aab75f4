// Compiled training with fusion on equals eager training: the seed MLP (one multi-output group),
// and a model whose loss and activations are chains of pointwise ops (more groups), 200 steps each,
// comparing losses, parameters and Adam's moments within 1e-5 relative.
#include <doctest/doctest.h>

#include "graph/compile.h"
#include "graph/fusion.h"
#include "graph_test_util.h"
#include "fusion_test_util.h"

namespace test_fused_training {

using namespace ember;

namespace {

void check_close(const Tensor& actual, const Tensor& expected, double tolerance = 1e-5) {
  const double error = graph_test::max_relative_error(actual, expected);
  CHECK(std::isfinite(error));
  CHECK(error <= tolerance);
}

void check_close_state(const std::vector<Tensor>& expected, const optim::Adam& eager_opt,
                       const std::vector<Tensor>& actual, const optim::Adam& compiled_opt) {
  REQUIRE(expected.size() == actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    check_close(actual[i], expected[i]);
    const auto* eager_state = eager_opt.state(expected[i]);
    const auto* compiled_state = compiled_opt.state(actual[i]);
    REQUIRE(eager_state != nullptr);
    REQUIRE(compiled_state != nullptr);
    CHECK(eager_state->step == compiled_state->step);
    check_close(compiled_state->exp_avg, eager_state->exp_avg);
    check_close(compiled_state->exp_avg_sq, eager_state->exp_avg_sq);
  }
}

}  // namespace

TEST_CASE("fused training: 200 seed-MLP steps with fusion equal eager within 1e-5") {
  graph_test::SeedMlp eager(3), compiled(3);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .fuse = true});
  for (int step = 0; step < 200; ++step) {
    auto [x, y] = graph_test::batch(step);
    INFO("step ", step);
    check_close(train_step(x, y), eager.step(x, y));
  }
  CHECK(train_step.state().replays() == 198);
  check_close_state(eager.model->parameters(), *eager.optimizer, compiled.model->parameters(), *compiled.optimizer);
  // The hidden layer's relu_backward and bias-gradient sum: one node exporting the masked gradient.
  CHECK(graph::fused_ops(*train_step.state().graph()).size() == 1);
}

TEST_CASE("fused training: a GELU MLP with a hand-written smooth-L1-like loss fuses and equals eager") {
  struct Model {
    nn::Linear first{nullptr}, second{nullptr};
    std::unique_ptr<optim::Adam> optimizer;
    explicit Model(uint64_t seed) {
      manual_seed(seed);
      first = nn::Linear(20, 32);
      second = nn::Linear(32, 4);
      std::vector<Tensor> parameters = first->parameters();
      for (const Tensor& parameter : second->parameters()) parameters.push_back(parameter);
      optimizer = std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = 1e-3});
    }
    Tensor step(const Tensor& x, const Tensor& target) {
      optimizer->zero_grad();
      Tensor hidden = gelu(first->forward(x), /*tanh_approximation=*/true);
      Tensor out = second->forward(mul(hidden, sigmoid(hidden)));
      // sqrt(1 + d^2) - 1: a pointwise chain ending in a mean.
      Tensor loss = mean(sub(sqrt(add(pow(sub(out, target), 2.0), 1.0)), 1.0));
      loss.backward();
      optimizer->step();
      return loss;
    }
  };
  Model eager(11), compiled(11);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .fuse = true});
  for (int step = 0; step < 200; ++step) {
    manual_seed(500 + static_cast<uint64_t>(step));
    const Tensor x = randn({16, 20});
    const Tensor y = randn({16, 4});
    INFO("step ", step);
    check_close(train_step(x, y), eager.step(x, y));
  }
  const graph::Graph& graph = *train_step.state().graph();
  INFO(graph::to_text(graph));
  CHECK(graph::fused_ops(graph).size() >= 2);
  check_close_state(eager.optimizer->param_groups()[0].params, *eager.optimizer,
                    compiled.optimizer->param_groups()[0].params, *compiled.optimizer);
}

}  // namespace test_fused_training
