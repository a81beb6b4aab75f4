// Autocast under the compile stage: the captured graph holds the casts as to_dtype nodes, a
// compiled bf16 training step equals eager bit for bit, and entering autocast recompiles.
#include <doctest/doctest.h>

#include "graph/compile.h"
#include "graph/ir.h"
#include "graph_test_util.h"

namespace test_autocast_compile {

using namespace ember;
using graph_test::SeedMlp;

namespace {

Tensor autocast_step(SeedMlp& run, const Tensor& x, const Tensor& y) {
  run.optimizer->zero_grad();
  Tensor loss;
  {
    AutocastGuard autocast(kBFloat16);
    loss = nn::functional::cross_entropy(run.model->forward(x), y);
  }
  loss.backward();
  run.optimizer->step();
  return loss;
}

}  // namespace

TEST_CASE("compile: a bf16 autocast training step equals eager and its graph holds to_dtype casts") {
  SeedMlp eager(4), compiled(4);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return autocast_step(compiled, x, y); },
                                   {.fullgraph = true});
  for (int step = 0; step < 6; ++step) {
    auto [x, y] = graph_test::batch(step);
    const Tensor expected = autocast_step(eager, x, y);
    const Tensor actual = train_step(x, y);
    INFO("step ", step);
    CHECK(graph_test::bit_equal(expected, actual));
  }
  CHECK(train_step.state().captures() == 1);
  CHECK(train_step.state().recompile_reasons().empty());
  const std::vector<Tensor> expected = eager.model->parameters();
  const std::vector<Tensor> actual = compiled.model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(actual[i].dtype() == kFloat32);
    CHECK(graph_test::bit_equal(expected[i], actual[i]));
  }
  REQUIRE(train_step.state().graph() != nullptr);
  const std::string text = graph::to_text(*train_step.state().graph());
  CHECK(text.find("to_dtype") != std::string::npos);
  CHECK(text.find("bfloat16") != std::string::npos);
}

TEST_CASE("compile: calling a compiled function inside an AutocastGuard recompiles with the reason") {
  const Tensor weight = randn({3, 4});
  auto project = ember::compile([&](const Tensor& x) { return matmul(x, weight.t()); });
  const Tensor x = randn({2, 4});
  project(x);  // warm-up
  CHECK(project(x).dtype() == kFloat32);
  Tensor inside;
  {
    AutocastGuard autocast(kBFloat16);
    inside = project(x);
  }
  CHECK(inside.dtype() == kBFloat16);
  REQUIRE(project.state().recompile_reasons().size() == 1);
  CHECK(project.state().recompile_reasons()[0].find("autocast is on (bfloat16), the graph was captured with off") !=
        std::string::npos);
  CHECK(project(x).dtype() == kFloat32);  // the first variant still serves calls without autocast
}

TEST_CASE("compile: a block of fn with autocast off keeps its float32 ops when the caller has autocast on") {
  // fn's ops on constants alone are folded at compile time; the capture already holds autocast's
  // casts, so folding under the caller's bf16 autocast ran the product in bf16: replays returned
  // bf16-rounded values, or, when the product itself became a constant, refused every call.
  const auto fn = [](const Tensor& x) {
    Tensor product;
    {
      AutocastGuard off(kBFloat16, false);
      product = mm(full({4, 4}, 0.1), full({4, 4}, 0.3));
    }
    return add(x, product);
  };
  AutocastGuard autocast(kBFloat16);
  auto compiled = ember::compile(fn, {.fullgraph = true});
  const Tensor x = full({4, 4}, 1.0);
  const Tensor expected = fn(x);
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    CHECK(graph_test::bit_equal(expected, compiled(x)));
  }
  CHECK(compiled.state().captures() == 1);
}

}  // namespace test_autocast_compile
