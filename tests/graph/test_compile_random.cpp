// ember::compile with random ops: dropout (functional and nn::Dropout), rand and randn inside a
// training step. Each replay reserves a fresh generator range, in eager's order, so a compiled
// step draws exactly what the eager step would (never the capture's numbers again), and the
// generator ends where eager leaves it. A Dropout module's train/eval flag is guarded, also for a
// Dropout not owned by a shared_ptr.
#include <doctest/doctest.h>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"
#include "runtime/random/generator.h"

namespace test_compile_random {

using namespace ember;

namespace {

struct Net {
  nn::Sequential layers;
  std::unique_ptr<optim::SGD> optimizer;
  Net() {
    manual_seed(11);  // the same initial parameters for every Net
    layers = nn::Sequential(nn::Linear(6, 16), nn::ReLU(), nn::Dropout(0.3), nn::Linear(16, 3));
    optimizer = std::make_unique<optim::SGD>(layers->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = mse_loss(layers->forward(x), y);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
  Tensor predict(const Tensor& x) { return layers->forward(x); }
};

// The data and the generator state of call `call`: both sides of a comparison start from it.
std::pair<Tensor, Tensor> batch(int call) {
  manual_seed(500 + static_cast<uint64_t>(call));
  Tensor x = randn({8, 6});
  Tensor y = randn({8, 3});
  return {x, y};
}

void check_same_parameters(Net& actual, Net& expected) {
  const std::vector<Tensor> a = actual.layers->parameters(), e = expected.layers->parameters();
  REQUIRE(a.size() == e.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter ", i);
    CHECK(graph_test::max_relative_error(a[i], e[i]) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("compile: a training step with dropout draws each call's own mask, as eager does") {
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    Net eager, compiled;
    auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                               {.fullgraph = true, .fuse = fuse});
    for (int call = 0; call < 5; ++call) {
      INFO("call ", call);
      auto [x, y] = batch(call);
      const Tensor expected = eager.step(x, y);
      const GeneratorState eager_after = default_generator().get_state();
      std::tie(x, y) = batch(call);
      const Tensor actual = step(x, y);
      CHECK(graph_test::max_relative_error(actual, expected) <= 1e-5);
      CHECK(default_generator().get_state() == eager_after);  // the same range was reserved
      check_same_parameters(compiled, eager);
    }
    CHECK(step.state().replays() == 3);
    REQUIRE(step.state().graph() != nullptr);
    CHECK(step.state().graph()->count_op("dropout") == 1);
  }
}

TEST_CASE("compile: a Dropout module switched to eval recompiles, and back to train replays") {
  NoGradGuard no_grad;
  Net eager, compiled;
  auto predict = ember::compile([&](const Tensor& x) { return compiled.predict(x); }, {.fullgraph = true});
  auto run_both = [&](int call) {
    auto [x, y] = batch(call);
    const Tensor expected = eager.predict(x);
    std::tie(x, y) = batch(call);
    CHECK(graph_test::max_relative_error(predict(x), expected) <= 1e-6);
  };
  for (int call = 0; call < 3; ++call) run_both(call);  // warm-up, capture in train mode, replay
  eager.layers->eval();
  compiled.layers->eval();
  for (int call = 3; call < 5; ++call) run_both(call);  // recompiles once, then replays
  REQUIRE(predict.state().recompile_reasons().size() == 1);
  CHECK(predict.state().recompile_reasons()[0] ==
        "the graph was captured with Dropout(p=0.3, inplace=False).training == true, which no longer holds");
  CHECK(predict.state().graph()->count_op("dropout") == 0);  // the eval variant
  eager.layers->train();
  compiled.layers->train();
  run_both(5);  // the train variant again, without a third capture
  CHECK(predict.state().captures() == 2);
  CHECK(predict.state().replays() == 3);
}

TEST_CASE("compile: rand and randn in a step, one of them unused, keep the generator in step with eager") {
  NoGradGuard no_grad;
  auto fn = [](const Tensor& x) {
    const Tensor noise = randn({4, 6});
    (void)rand({5});  // dead, but eager advanced the generator for it: so does every replay
    const Tensor kept = ember::dropout(x, 0.5, true);
    return sum(mul(add(x, mul(noise, 0.1)), kept));
  };
  auto compiled = ember::compile(fn, {.fullgraph = true});
  std::vector<double> results;
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    manual_seed(900);  // the same generator state each call: a replay must reproduce eager
    const Tensor x = randn({4, 6});
    const Tensor expected = fn(x);
    const GeneratorState eager_after = default_generator().get_state();
    manual_seed(900);
    const Tensor same_x = randn({4, 6});
    CHECK(graph_test::max_relative_error(compiled(same_x), expected) <= 1e-6);
    CHECK(default_generator().get_state() == eager_after);
    // And a different state gives different draws (nothing was frozen at capture).
    manual_seed(901 + static_cast<uint64_t>(call));
    results.push_back(compiled(same_x).item());
  }
  CHECK(compiled.state().replays() >= 5);
  for (size_t i = 1; i < results.size(); ++i) CHECK(results[i] != results[i - 1]);
}

TEST_CASE("compile: a Dropout module not owned by a shared_ptr replays, and eval() recompiles") {
  NoGradGuard no_grad;
  nn::DropoutImpl dropout(0.5);  // a local, as a member held by value would be: no shared_ptr to it
  auto apply = ember::compile([&](const Tensor& x) { return dropout.forward(x); }, {.fullgraph = true});
  const Tensor x = graph_test::seeded_randn({64}, 4200);
  for (int call = 0; call < 4; ++call) apply(x);  // before: each call captured again ("no longer holds")
  CHECK(apply.state().captures_made() == 1);
  CHECK(apply.state().replays() == 2);
  dropout.eval();
  CHECK(graph_test::max_relative_error(apply(x), x) == 0);  // the identity, as eager's eval mode
  REQUIRE(apply.state().recompile_reasons().size() == 1);
  CHECK(apply.state().recompile_reasons()[0] ==
        "the graph was captured with Dropout(p=0.5, inplace=False).training == true, which no longer holds");
}

}  // namespace test_compile_random
