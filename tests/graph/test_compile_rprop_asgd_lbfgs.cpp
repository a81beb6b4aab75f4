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
#include "optimizer_side_by_side.h"

namespace test_compile_rprop_asgd_lbfgs {

using namespace ember;
using ember::graph_test::train_side_by_side;

namespace {

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
  train_side_by_side<optim::Rprop>({.lr = 0.01, .etas = {0.4, 1.3}, .step_sizes = {1e-4, 0.02}}, /*lowered=*/true,
                                   0);
}

TEST_CASE("compile: ASGD training steps equal eager, eta and mu read per replay, one recompile past t0") {
  // t0 = 3: the average copies the parameter through step 5 (mu = 1), then averages.
  train_side_by_side<optim::ASGD>({.lr = 0.05, .lambd = 0.01, .t0 = 3.0, .weight_decay = 0.01}, /*lowered=*/true,
                                  1);
  // t0 far away: no recompile.
  train_side_by_side<optim::ASGD>({.lr = 0.05, .lambd = 0.01, .maximize = true}, /*lowered=*/true, 0);
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

}  // namespace test_compile_rprop_asgd_lbfgs
