// ember::compile and the .grad of parameters the compiled code never touches: a replay writes a
// parameter's .grad only where eager execution of fn would have (fn's zero_grad, or a gradient
// the graph computes). A compiled evaluation run between backward() and step() must leave the
// gradients alone, and a step's zero_grad must clear a .grad that was unset when it was captured.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "compile_autograd_util.h"
#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/sgd.h"

namespace test_compile_grads {

using namespace ember;

namespace {

nn::Sequential small_model() {
  manual_seed(51);
  return nn::Sequential(nn::Linear(6, 10), nn::Tanh(), nn::Linear(10, 3));
}

Tensor batch(int call) {
  manual_seed(900 + static_cast<uint64_t>(call));
  return randn({4, 6});
}

}  // namespace

TEST_CASE("compile: an evaluation compiled without grad leaves the parameters' gradients alone") {
  nn::Sequential model = small_model();
  auto evaluate = ember::compile([&](const Tensor& x) {
    NoGradGuard no_grad;
    return model->forward(x);
  }, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    model->zero_grad();
    // The first two calls (the eager warm-up and the capture) see no gradients; the replays do.
    if (call >= 2) sum(model->forward(batch(call))).backward();
    std::vector<Tensor> before;
    for (const Tensor& parameter : model->parameters())
      before.push_back(parameter.grad().defined() ? parameter.grad().clone() : Tensor());
    const Tensor out = evaluate(batch(100 + call));
    CHECK(out.sizes() == Dims{4, 3});
    const std::vector<Tensor> parameters = model->parameters();
    for (size_t i = 0; i < parameters.size(); ++i) {
      INFO("parameter ", i);
      REQUIRE(parameters[i].grad().defined() == before[i].defined());
      if (before[i].defined()) CHECK(graph_test::max_relative_error(parameters[i].grad(), before[i]) == 0.0);
    }
  }
  CHECK(evaluate.state().replays() == 3);
}

TEST_CASE("compile: a step's zero_grad clears a gradient that was unset when the step was captured") {
  // The second layer is unused by the step, so eager's zero_grad is what clears its .grad: a
  // gradient set between calls (by an eager backward, say) must be gone after every call.
  nn::Sequential compiled_model = small_model(), eager_model = small_model();
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.1});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.1});
  auto first_layer_step = [](nn::Sequential& model, optim::SGD& optimizer, const Tensor& x) {
    optimizer.zero_grad();
    Tensor loss = sum(tanh(model->at<nn::LinearImpl>(0)->forward(x)));
    loss.backward();
    optimizer.step();
    return loss.detach();
  };
  auto step = ember::compile(
      [&](const Tensor& x) { return first_layer_step(compiled_model, compiled_optimizer, x); }, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    if (call >= 2) {  // unset at the warm-up and the capture, set before each replay
      const Tensor ones_grad = ones({3, 10});
      compiled_model->at<nn::LinearImpl>(2)->weight.set_grad(ones_grad);
      eager_model->at<nn::LinearImpl>(2)->weight.set_grad(ones_grad.clone());
    }
    const Tensor x = batch(call);
    CHECK(graph_test::max_relative_error(step(x), first_layer_step(eager_model, eager_optimizer, x)) <= 1e-6);
    compile_autograd_test::check_grads(compiled_model, eager_model, 1e-6);
  }
  CHECK(step.state().replays() == 3);
}

// The update half of a training step, compiled alone: optionally clipping (which reads the
// gradients before any parameter), then the optimizer step and zero_grad.
template <typename Optimizer>
Tensor clip_and_step(nn::Sequential& model, Optimizer& optimizer, bool clip) {
  Tensor norm = zeros({});
  if (clip) {
    std::vector<Tensor> grads;
    for (const Tensor& parameter : model->parameters()) grads.push_back(parameter.grad());
    norm = nn::utils::get_total_norm(grads);
    nn::utils::clip_grads_with_norm_(model->parameters(), 0.5, norm);
  }
  optimizer.step();
  optimizer.zero_grad();
  return norm;
}

TEST_CASE("compile: an optimizer step compiled alone reads each call's new gradients") {
  // backward() outside makes new .grad tensors each call (the step's zero_grad drops them): a
  // replay must read the current ones, bound through their parameters (GradInput), and never the
  // tensors it was captured with.
  for (const bool clip : {false, true}) {
    INFO("clip ", clip);
    nn::Sequential compiled_model = small_model(), eager_model = small_model();
    optim::AdamW compiled_optimizer(compiled_model->parameters(), {.lr = 0.05});
    optim::AdamW eager_optimizer(eager_model->parameters(), {.lr = 0.05});
    auto update = ember::compile([&] { return clip_and_step(compiled_model, compiled_optimizer, clip); },
                                 {.fullgraph = true});
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      sum(mul(tanh(compiled_model->forward(batch(call))), 3.0)).backward();
      sum(mul(tanh(eager_model->forward(batch(call))), 3.0)).backward();
      const Tensor norm = update(), expected_norm = clip_and_step(eager_model, eager_optimizer, clip);
      CHECK(graph_test::max_relative_error(norm, expected_norm) <= 1e-6);
      const std::vector<Tensor> compiled = compiled_model->parameters(), eager = eager_model->parameters();
      for (size_t i = 0; i < compiled.size(); ++i) {
        INFO("parameter ", i);
        CHECK(graph_test::max_relative_error(compiled[i], eager[i]) <= 1e-6);
        CHECK_FALSE(compiled[i].grad().defined());
      }
    }
    CHECK(update.state().captures() == 1);
    CHECK(update.state().replays() == 4);
    const std::string dump = graph::to_text(*update.state().graph());
    CHECK(dump.find("is the .grad of %s") != std::string::npos);
  }
}

TEST_CASE("compile: a step reading a .grad that is unset at a later call recompiles") {
  nn::Sequential model = small_model();
  optim::SGD optimizer(model->parameters(), {.lr = 0.1});
  auto update = ember::compile([&] { return clip_and_step(model, optimizer, true); });
  for (int call = 0; call < 4; ++call) {
    sum(model->forward(batch(call))).backward();
    update();
  }
  // No backward before this call: eager skips the unset gradients (a zero norm, no update); the
  // compiled function must not replay with stale ones, it recompiles.
  const std::vector<Tensor> before = model->parameters();
  std::vector<Tensor> kept;
  for (const Tensor& parameter : before) kept.push_back(parameter.clone());
  CHECK(update().item() == 0.0);
  for (size_t i = 0; i < kept.size(); ++i) CHECK(graph_test::max_relative_error(before[i], kept[i]) == 0.0);
  REQUIRE_FALSE(update.state().recompile_reasons().empty());
  CHECK(update.state().recompile_reasons().back().find(".grad of state") != std::string::npos);
}

TEST_CASE("compile: a function returning nothing (an optimizer step compiled alone) replays its effects") {
  nn::Sequential compiled_model = small_model(), eager_model = small_model();
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  auto step = ember::compile([&] { compiled_optimizer.step(); }, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    compiled_optimizer.zero_grad();
    eager_optimizer.zero_grad();
    sum(tanh(compiled_model->forward(batch(call)))).backward();
    sum(tanh(eager_model->forward(batch(call)))).backward();
    step();
    eager_optimizer.step();
    const std::vector<Tensor> compiled = compiled_model->parameters(), eager = eager_model->parameters();
    for (size_t i = 0; i < compiled.size(); ++i) CHECK(graph_test::max_relative_error(compiled[i], eager[i]) <= 1e-6);
  }
  CHECK(step.state().captures() == 1);
  CHECK(step.state().replays() == 3);
  CHECK(step.state().graph()->outputs.empty());
}

TEST_CASE("compile: fn setting a .grad to a tensor of its own sets that tensor at every replay") {
  // A hand-made gradient for the first weight, changed in place between calls; the other
  // parameters get gradients between calls that the step's zero_grad must clear.
  nn::Sequential compiled_model = small_model(), eager_model = small_model();
  optim::SGD compiled_optimizer(compiled_model->parameters(), {.lr = 0.1});
  optim::SGD eager_optimizer(eager_model->parameters(), {.lr = 0.1});
  Tensor compiled_direction = ones({10, 6}), eager_direction = ones({10, 6});
  const auto step_of = [](nn::Sequential& model, optim::SGD& optimizer, const Tensor& direction) {
    optimizer.zero_grad();
    model->at<nn::LinearImpl>(0)->weight.set_grad(direction);
    optimizer.step();
  };
  auto step = ember::compile([&] { step_of(compiled_model, compiled_optimizer, compiled_direction); },
                             {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    compiled_direction.mul_(0.5);
    eager_direction.mul_(0.5);
    for (nn::Sequential* model : {&compiled_model, &eager_model})
      for (Tensor parameter : (*model)->parameters()) parameter.set_grad(full(parameter.sizes(), 3.0));
    step();
    step_of(eager_model, eager_optimizer, eager_direction);
    const std::vector<Tensor> compiled = compiled_model->parameters(), eager = eager_model->parameters();
    for (size_t i = 0; i < compiled.size(); ++i) {
      INFO("parameter ", i);
      CHECK(graph_test::max_relative_error(compiled[i], eager[i]) <= 1e-6);
      REQUIRE(compiled[i].grad().defined() == eager[i].grad().defined());
    }
    CHECK(compiled_model->at<nn::LinearImpl>(0)->weight.grad().is_same(compiled_direction));
  }
  CHECK(step.state().replays() == 3);
  CHECK(graph::to_text(*step.state().graph()).find(".grad of") == std::string::npos);
}

TEST_CASE("compile: a step compiled while a .grad was unset updates that parameter once it has one, as eager") {
  // The second parameter has no .grad at the warm-up and the capture, then gets one from call 3
  // on (backward outside fn, as a layer that joins the loss later): eager steps it from then on,
  // so a replay that still skips it would leave it behind silently. float64 throughout, so the
  // compiled and eager steps (the same fused ops) agree to the bit.
  using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<const char*, MakeOptimizer>> kinds = {
      {"SGD", [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1});
       }},
      {"SGD momentum dampening", [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(std::move(p),
                                             optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
       }},
      {"Adam amsgrad", [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .amsgrad = true});
       }},
  };
  struct Setup {
    Tensor a = from_vector<double>({1.0, 2.0}, {2}, {.dtype = kFloat64}).requires_grad_();
    Tensor c = from_vector<double>({0.5, 0.25}, {2}, {.dtype = kFloat64}).requires_grad_();
    std::unique_ptr<optim::Optimizer> optimizer;
    void set_grads(int call) {
      const double s = call;
      a.set_grad(from_vector<double>({1.0 + s, -0.5 * s}, {2}, {.dtype = kFloat64}));
      c.set_grad(call >= 3 ? from_vector<double>({0.3 * s, -0.7}, {2}, {.dtype = kFloat64}) : Tensor());
    }
  };
  for (const auto& [name, make] : kinds)
    for (const bool lowered : {false, true}) {
      const std::string label = std::string(name) + (lowered ? ", lowered" : ", graph executor");
      INFO(label);
      Setup eager, compiled;
      eager.optimizer = make({eager.a, eager.c});
      compiled.optimizer = make({compiled.a, compiled.c});
      auto step = ember::compile([&] { compiled.optimizer->step(); }, {.fullgraph = true, .lowered = lowered});
      for (int call = 0; call < 8; ++call) {
        INFO("call ", call);
        eager.set_grads(call);
        compiled.set_grads(call);
        eager.optimizer->step();
        step();
        CHECK(compiled.a.to_vector<double>() == eager.a.to_vector<double>());
        CHECK(compiled.c.to_vector<double>() == eager.c.to_vector<double>());
      }
      // The capture with c's .grad unset, and the one its new gradient asks for.
      CHECK(step.state().captures_made() == 2);
      REQUIRE(step.state().recompile_reasons().size() == 1);
      CHECK(step.state().recompile_reasons()[0].find("no .grad on the leaf of shape [2]") != std::string::npos);
    }
}

TEST_CASE("compile: gradient clipping compiled while a .grad was unset clips it once it has one, as eager") {
  // A hand-written decay after the clipping puts the parameter in the graph (its .grad is then
  // read per call); the .grad appears from call 2 on, after the warm-up and the capture.
  const auto clip_and_decay = [](Tensor& w) {
    nn::utils::clip_grad_value_({w}, 0.5);
    NoGradGuard no_grad;
    w.mul_(0.5);
  };
  Tensor compiled_w = from_vector<double>({1.0, -2.0, 3.0}, {3}, {.dtype = kFloat64}).requires_grad_();
  Tensor eager_w = compiled_w.detach().clone().requires_grad_();
  auto step = ember::compile([&] { clip_and_decay(compiled_w); }, {.fullgraph = true});
  for (int call = 0; call < 6; ++call) {
    INFO("call ", call);
    if (call >= 2) {
      compiled_w.set_grad(from_vector<double>({0.25 * call, -3.0, 0.1}, {3}, {.dtype = kFloat64}));
      eager_w.set_grad(from_vector<double>({0.25 * call, -3.0, 0.1}, {3}, {.dtype = kFloat64}));
    }
    step();
    clip_and_decay(eager_w);
    CHECK(compiled_w.to_vector<double>() == eager_w.to_vector<double>());
    REQUIRE(compiled_w.grad().defined() == eager_w.grad().defined());
    if (call >= 2)
      CHECK(compiled_w.grad().to_vector<double>() == std::vector<double>{std::min(0.25 * call, 0.5), -0.5, 0.1});
  }
  CHECK(step.state().captures_made() == 2);
}

}  // namespace test_compile_grads
