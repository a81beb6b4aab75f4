// ember::compile with gradients that outlive one call: accumulation over micro-batches (backward
// without zero_grad, the update every k-th call by a second compiled function), zero_grad that
// keeps the tensors (set_to_none = false), and gradient clipping by norm inside the update (with
// get_total_norm and clip_grads_with_norm_, which never read the norm on the host), and a change
// of a hyperparameter other than lr between calls (a recompile). Each compiled result, gradient
// and parameter must equal eager's at every call.
#include <doctest/doctest.h>

#include "fusion_test_util.h"
#include "graph/capture.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/clip_grad.h"

namespace test_compile_accumulation {

using namespace ember;

namespace {

struct Mlp {
  nn::Sequential layers;
  std::unique_ptr<optim::AdamW> optimizer;
  Mlp() {
    manual_seed(21);
    layers = nn::Sequential(nn::Linear(5, 12), nn::Tanh(), nn::Linear(12, 2));
    optimizer = std::make_unique<optim::AdamW>(layers->parameters(), optim::AdamWOptions{.lr = 0.02});
  }
  // Adds this micro-batch's gradient to whatever .grad holds.
  Tensor accumulate(const Tensor& x, const Tensor& y) {
    Tensor loss = mul(mse_loss(layers->forward(x), y), 0.5);
    loss.backward();
    return loss.detach();
  }
  // Clipping without a host read (clip_grad_norm_ returns a double: a graph break), the update,
  // and a zero_grad that keeps the gradient tensors for the next accumulation.
  Tensor update() {
    std::vector<Tensor> grads;
    for (const Tensor& parameter : layers->parameters()) grads.push_back(parameter.grad());
    const Tensor norm = nn::utils::get_total_norm(grads);
    nn::utils::clip_grads_with_norm_(layers->parameters(), 0.5, norm);
    optimizer->step();
    optimizer->zero_grad(/*set_to_none=*/false);
    return norm;
  }
};

std::pair<Tensor, Tensor> micro_batch(int call) {
  manual_seed(700 + static_cast<uint64_t>(call));
  Tensor x = randn({6, 5});
  Tensor y = randn({6, 2});
  return {x, y};
}

void check_same(Mlp& actual, Mlp& expected, const char* what) {
  INFO(what);
  const std::vector<Tensor> a = actual.layers->parameters(), e = expected.layers->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter ", i);
    CHECK(graph_test::max_relative_error(a[i], e[i]) <= 1e-5);
    REQUIRE(a[i].grad().defined() == e[i].grad().defined());
    if (e[i].grad().defined()) CHECK(graph_test::max_relative_error(a[i].grad(), e[i].grad()) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("compile: gradients accumulated over micro-batches, then a clipped update, equal eager") {
  Mlp eager, compiled;
  auto accumulate = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.accumulate(x, y); },
                                   {.fullgraph = true});
  auto update = ember::compile([&] { return compiled.update(); }, {.fullgraph = true});
  constexpr int kMicroBatches = 3;
  for (int call = 0; call < 4 * kMicroBatches; ++call) {
    INFO("call ", call);
    const auto [x, y] = micro_batch(call);
    CHECK(graph_test::max_relative_error(accumulate(x, y), eager.accumulate(x, y)) <= 1e-5);
    check_same(compiled, eager, "after accumulating");
    if (call % kMicroBatches == kMicroBatches - 1) {
      CHECK(graph_test::max_relative_error(update(), eager.update()) <= 1e-5);
      check_same(compiled, eager, "after the update");
    }
  }
  CHECK(accumulate.state().captures() == 1);
  CHECK(update.state().captures() == 1);
  CHECK(update.state().replays() == 2);
}

TEST_CASE("compile: clip_grad_norm_ reads the norm on the host, a break that fullgraph names") {
  Mlp model;
  auto update = ember::compile(
      [&] {
        (void)optim::clip_grad_norm_(model.layers->parameters(), 0.5);
        model.optimizer->step();
        return model.layers->parameters()[0].detach();
      },
      {.fullgraph = true});
  const auto [x, y] = micro_batch(0);
  (void)model.accumulate(x, y);
  (void)update();  // the eager warm-up
  CHECK_THROWS_WITH_AS(update(), doctest::Contains("item() reads the values"), graph::GraphBreak);
}

TEST_CASE("compile: changing an optimizer hyperparameter other than lr recompiles") {
  Mlp eager, compiled;
  auto step = ember::compile(
      [&](const Tensor& x, const Tensor& y) {
        Tensor loss = compiled.accumulate(x, y);
        compiled.optimizer->step();
        compiled.optimizer->zero_grad();
        return loss;
      },
      {.fullgraph = true});
  auto eager_step = [&](const Tensor& x, const Tensor& y) {
    Tensor loss = eager.accumulate(x, y);
    eager.optimizer->step();
    eager.optimizer->zero_grad();
    return loss;
  };
  for (int call = 0; call < 6; ++call) {
    INFO("call ", call);
    if (call == 3)  // a weight-decay schedule, say: baked into the graph, so it must recompile
      for (Mlp* model : {&eager, &compiled}) model->optimizer->param_groups()[0].options.weight_decay = 0.3;
    if (call == 4)  // lr is read per call: no recompile
      for (Mlp* model : {&eager, &compiled}) model->optimizer->set_lr(0, 0.005);
    const auto [x, y] = micro_batch(call);
    CHECK(graph_test::max_relative_error(step(x, y), eager_step(x, y)) <= 1e-5);
    check_same(compiled, eager, "after the step");
  }
  REQUIRE(step.state().recompile_reasons().size() == 1);
  CHECK(step.state().recompile_reasons()[0] ==
        "the graph was captured with AdamW param group 0 of 1 with 4 parameters at beta1=0.9, beta2=0.999, "
        "eps=1e-08, weight_decay=0.01, amsgrad=false, maximize=false, which no longer holds");
  CHECK(step.state().captures() == 2);
}

TEST_CASE("compile: an optimizer's guard fails once it is changed or destroyed, whatever its copies do") {
  Tensor p = randn({3}).requires_grad_();
  p.set_grad(ones({3}));
  auto optimizer = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  graph::Graph graph;
  graph::CaptureMode mode(graph, /*fullgraph=*/true);
  {
    DispatchModeGuard installed(mode);
    optimizer->step();
  }
  const std::vector<HostGuard> guards = mode.take_host_guards();
  REQUIRE(guards.size() == 1);
  CHECK(guards[0].holds());
  optimizer->param_groups()[0].options.momentum = 0.5;
  CHECK_FALSE(guards[0].holds());
  optimizer->param_groups()[0].options.momentum = 0.9;
  CHECK(guards[0].holds());
  const optim::SGD copy = *optimizer;  // a copy has a lifetime of its own
  optimizer.reset();
  CHECK_FALSE(guards[0].holds());  // never a read of the destroyed optimizer
  CHECK(copy.param_groups()[0].options.momentum == 0.9);
}

}  // namespace test_compile_accumulation
