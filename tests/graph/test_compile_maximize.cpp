// ember::compile with the optimizers' maximize option: the captured per-parameter steps carry it,
// compiled steps equal eager ones bit for bit, and turning it on between calls recompiles (it is
// baked into the graph like every hyperparameter but lr).
#include <doctest/doctest.h>

#include "graph/compile.h"
#include "graph_test_util.h"

namespace test_compile_maximize {

using namespace ember;

namespace {

struct Model {
  nn::Sequential layers;
  std::unique_ptr<optim::Optimizer> optimizer;

  Model(bool adam, bool maximize) {
    manual_seed(11);
    layers = nn::Sequential(nn::Linear(100, 16), nn::Tanh(), nn::Linear(16, 10));
    if (adam)
      optimizer = std::make_unique<optim::Adam>(layers->parameters(),
                                                optim::AdamOptions{.lr = 0.01, .amsgrad = true, .maximize = maximize});
    else
      optimizer = std::make_unique<optim::SGD>(
          layers->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .maximize = maximize});
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = cross_entropy(layers->forward(x), y);
    loss.backward();
    optimizer->step();
    return loss;
  }
  void set_maximize(bool on) {
    if (auto* adam = dynamic_cast<optim::Adam*>(optimizer.get())) adam->param_groups()[0].options.maximize = on;
    if (auto* sgd = dynamic_cast<optim::SGD*>(optimizer.get())) sgd->param_groups()[0].options.maximize = on;
  }
};

}  // namespace

TEST_CASE("compile: SGD and Adam with maximize equal eager bit for bit, and toggling it recompiles") {
  for (bool adam : {false, true}) {
    CAPTURE(adam);
    Model eager(adam, /*maximize=*/true), compiled(adam, /*maximize=*/true);
    auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                     {.fullgraph = true});
    for (int step = 0; step < 8; ++step) {
      CAPTURE(step);
      if (step == 5)
        for (Model* model : {&eager, &compiled}) model->set_maximize(false);
      auto [x, y] = graph_test::batch(step, 16);
      CHECK(graph_test::bit_equal(eager.step(x, y), train_step(x, y)));
    }
    const std::vector<Tensor> expected = eager.layers->parameters(), actual = compiled.layers->parameters();
    for (size_t i = 0; i < expected.size(); ++i) CHECK(graph_test::bit_equal(expected[i], actual[i]));
    CHECK(train_step.state().captures() == 2);
    REQUIRE(train_step.state().recompile_reasons().size() == 1);
    CHECK(train_step.state().recompile_reasons()[0].find("maximize=true, which no longer holds") != std::string::npos);
  }
}

}  // namespace test_compile_maximize
