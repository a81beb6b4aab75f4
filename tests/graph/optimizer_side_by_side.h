// A small MLP trained by an optimizer with a StepLR, compiled and eager side by side from one
// seed: the compiled step must equal the eager one exactly on the CPU (losses, parameters, state
// buffers, step counts and rates), with an LR changed between calls read per replay. Shared by the
// tests of the optimizers inside ember::compile.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph_test_util.h"

namespace ember::graph_test {

// Compiled against eager float32 on the CPU: exact, since libember and the fused code are built
// without FMA contraction (docs/ARCHITECTURE.md, "Code generation"; it was issue 4's 1e-5).
constexpr double kTolerance = 0.0;

// A small MLP trained by `Optimizer`, with a StepLR stepped after each optimizer step.
template <typename Optimizer>
struct Trainer {
  nn::Sequential model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<optim::StepLR> scheduler;

  Trainer(uint64_t seed, const typename Optimizer::Options& options) {
    manual_seed(seed);
    model = nn::Sequential(nn::Linear(100, 32), nn::Tanh(), nn::Linear(32, 10));
    optimizer = std::make_unique<Optimizer>(model->parameters(), options);
    scheduler = std::make_unique<optim::StepLR>(*optimizer, 4, 0.5);
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    optimizer->step();
    scheduler->step();
    return loss;
  }
};

// Every parameter and state buffer equal within kTolerance, every step count and option exactly.
template <typename Optimizer>
void check_same_training(Trainer<Optimizer>& eager, Trainer<Optimizer>& compiled) {
  const std::vector<Tensor> expected = eager.model->parameters(), actual = compiled.model->parameters();
  REQUIRE(expected.size() == actual.size());
  for (size_t i = 0; i < expected.size(); ++i)
    CHECK(graph_test::max_relative_error(actual[i], expected[i]) <= kTolerance);
  const optim::OptimizerState eager_state = eager.optimizer->state_dict();
  const optim::OptimizerState compiled_state = compiled.optimizer->state_dict();
  CHECK(compiled_state.scalars.keys() == eager_state.scalars.keys());
  for (const auto& [key, value] : eager_state.scalars) {
    INFO(key);
    CHECK(compiled_state.scalars[key] == value);
  }
  REQUIRE(compiled_state.tensors.keys() == eager_state.tensors.keys());
  for (const auto& [key, tensor] : eager_state.tensors) {
    INFO(key);
    CHECK(graph_test::max_relative_error(compiled_state.tensors[key], tensor) <= kTolerance);
  }
}

template <typename Optimizer>
void train_side_by_side(const typename Optimizer::Options& options, bool lowered, size_t recompiles = 0) {
  Trainer<Optimizer> eager(5, options), compiled(5, options);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .lowered = lowered});
  for (int step = 0; step < 14; ++step) {
    if (step == 7) {  // a change between calls, as a hand-written schedule makes
      eager.optimizer->set_lr(0, 0.5 * eager.optimizer->get_lr(0));
      compiled.optimizer->set_lr(0, 0.5 * compiled.optimizer->get_lr(0));
    }
    auto [x, y] = graph_test::batch(step, 16);
    INFO("step ", step);
    const Tensor expected = eager.step(x, y);
    CHECK(graph_test::max_relative_error(train_step(x, y), expected) <= kTolerance);
  }
  CHECK(train_step.state().captures() == 1 + recompiles);
  CHECK(train_step.state().replays() == 12 - recompiles);
  CHECK(train_step.state().recompile_reasons().size() == recompiles);
  CHECK(compiled.optimizer->get_lr(0) == eager.optimizer->get_lr(0));
  check_same_training(eager, compiled);
}

}  // namespace ember::graph_test
