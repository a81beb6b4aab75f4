// Rprop, ASGD and LBFGS inside ember::compile. Rprop and ASGD: a compiled training step equals
// the eager one over many steps (parameters, state buffers, step counts, ASGD's eta and mu
// exactly), eta and mu read per replay; ASGD recompiles once, when its average stops copying the
// parameter (mu leaves 1 after t0). LBFGS reads the loss on the host: fullgraph refuses it naming
// LBFGS.step, before any parameter moved, and without fullgraph it runs as segments, as eager.
#include <doctest/doctest.h>

#include "fusion_test_util.h"
#include "graph/capture.h"
#include "graph/compile.h"
#include "graph_test_util.h"

using namespace ember;

namespace {

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

// Exact on the CPU: libember and the fused code are built without FMA contraction.
template <typename Optimizer>
void train_side_by_side(const typename Optimizer::Options& options, size_t recompiles) {
  Trainer<Optimizer> eager(5, options), compiled(5, options);
  auto train_step =
      ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); }, {.fullgraph = true});
  for (int step = 0; step < 14; ++step) {
    if (step == 7) {
      eager.optimizer->set_lr(0, 0.5 * eager.optimizer->get_lr(0));
      compiled.optimizer->set_lr(0, 0.5 * compiled.optimizer->get_lr(0));
    }
    auto [x, y] = graph_test::batch(step, 16);
    INFO("step ", step);
    const Tensor expected = eager.step(x, y);
    CHECK(graph_test::max_relative_error(train_step(x, y), expected) == 0.0);
  }
  CHECK(train_step.state().captures() == 1 + recompiles);
  CHECK(train_step.state().replays() == 12 - recompiles);
  const std::vector<Tensor> expected = eager.model->parameters(), actual = compiled.model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) CHECK(graph_test::max_relative_error(actual[i], expected[i]) == 0.0);
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
    CHECK(graph_test::max_relative_error(compiled_state.tensors[key], tensor) == 0.0);
  }
}

struct Rosenbrock {
  Tensor x = from_vector<double>({-1.5}, {1}, {.dtype = kFloat64}).requires_grad_();
  Tensor y = from_vector<double>({2.0}, {1}, {.dtype = kFloat64}).requires_grad_();
  optim::LBFGS optimizer{{x, y}, {.max_iter = 3, .line_search_fn = "strong_wolfe"}};
  Tensor step() {
    return optimizer.step([&] {
      optimizer.zero_grad();
      const Tensor a = 1.0 - x, b = y - x * x;
      Tensor loss = (a * a + b * b * 100.0).sum();
      loss.backward();
      return loss;
    });
  }
};

}  // namespace

TEST_CASE("compile: Rprop training steps equal eager, the step count advanced per replay") {
  train_side_by_side<optim::Rprop>({.lr = 0.01, .etas = {0.4, 1.3}, .step_sizes = {1e-4, 0.02}}, 0);
}

TEST_CASE("compile: ASGD training steps equal eager, eta and mu read per replay, one recompile past t0") {
  // t0 = 3: the average copies the parameter through step 5 (mu = 1), then averages.
  train_side_by_side<optim::ASGD>({.lr = 0.05, .lambd = 0.01, .t0 = 3.0, .weight_decay = 0.01}, 1);
  // t0 far away: no recompile.
  train_side_by_side<optim::ASGD>({.lr = 0.05, .lambd = 0.01, .maximize = true}, 0);
}

TEST_CASE("compile: LBFGS reads the loss on the host, which fullgraph refuses before a parameter moves") {
  Rosenbrock problem;
  auto strict = ember::compile([&] { return problem.step(); }, {.fullgraph = true, .warmup_calls = 0});
  CHECK_THROWS_WITH_AS(strict(), doctest::Contains("graph break: LBFGS.step: loss.item() reads the values of"),
                       graph::GraphBreak);
  CHECK(problem.x.item() == -1.5);
  CHECK(problem.y.item() == 2.0);
  CHECK(problem.optimizer.state() == nullptr);
}

TEST_CASE("compile: LBFGS without fullgraph runs as segments and equals eager") {
  Rosenbrock eager, compiled;
  auto lenient = ember::compile([&] { return compiled.step(); }, {.warmup_calls = 0});
  for (int step = 0; step < 3; ++step) {
    INFO("step ", step);
    CHECK(lenient().item() == eager.step().item());
    CHECK(compiled.x.item() == eager.x.item());
    CHECK(compiled.y.item() == eager.y.item());
    CHECK(compiled.optimizer.state()->func_evals == eager.optimizer.state()->func_evals);
  }
  CHECK_FALSE(lenient.state().fell_back_to_eager());
}
