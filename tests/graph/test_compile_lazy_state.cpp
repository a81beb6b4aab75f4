// ember::compile with optimizer state that appears after the first call: a capture that makes a
// parameter's first step (no warm-up call, or a layer unfrozen later), and parameters handed to
// the optimizer after the capture. Every loss, parameter and optimizer buffer must equal eager's
// at every call, and the optimizer's own state (step counts, momentum buffers) must carry on
// across replays as it does eagerly.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/sgd.h"

namespace test_compile_lazy_state {

using namespace ember;

namespace {

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct NamedOptimizer {
  const char* name;
  MakeOptimizer make;
};

// Every optimizer whose state is made on a parameter's first step, with the options that change
// what that first step does (dampening: PyTorch's first momentum step takes the gradient whole).
std::vector<NamedOptimizer> lazy_optimizers() {
  return {
      {"SGD momentum", [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
       }},
      {"SGD momentum dampening", [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(std::move(p),
                                             optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.5});
       }},
      {"SGD nesterov", [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(std::move(p),
                                             optim::SGDOptions{.lr = 0.05, .momentum = 0.8, .nesterov = true});
       }},
      {"Adam", [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.01});
       }},
      {"AdamW amsgrad", [](std::vector<Tensor> p) {
         return std::make_unique<optim::AdamW>(std::move(p),
                                               optim::AdamWOptions{.lr = 0.01, .weight_decay = 0.1, .amsgrad = true});
       }},
  };
}

struct Model {
  nn::Sequential layers;
  std::unique_ptr<optim::Optimizer> optimizer;
  explicit Model(const MakeOptimizer& make) {
    manual_seed(5);
    layers = nn::Sequential(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 4));
    optimizer = make(layers->parameters());
  }
  void freeze_first_layer(bool frozen) {
    std::vector<Tensor> parameters = layers->parameters();
    parameters[0].requires_grad_(!frozen);
    parameters[1].requires_grad_(!frozen);
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = cross_entropy(layers->forward(x), y);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

std::pair<Tensor, Tensor> batch(int call) {
  manual_seed(100 + static_cast<uint64_t>(call));
  Tensor x = randn({6, 8});
  Tensor y = randint(0, 4, {6}, {.dtype = kInt64});
  return {x, y};
}

// Parameters and every state tensor of the optimizer (momentum buffers, moments) equal.
void check_same(const Model& actual, const Model& expected) {
  const std::vector<Tensor> a = actual.layers->parameters(), e = expected.layers->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter ", i);
    CHECK(graph_test::max_relative_error(a[i], e[i]) <= 1e-5);
  }
  const optim::OptimizerState a_state = actual.optimizer->state_dict(), e_state = expected.optimizer->state_dict();
  REQUIRE(a_state.tensors.keys() == e_state.tensors.keys());
  for (const std::string& key : e_state.tensors.keys()) {
    INFO("optimizer state ", key);
    CHECK(graph_test::max_relative_error(a_state.tensors.at(key), e_state.tensors.at(key)) <= 1e-5);
  }
  REQUIRE(a_state.scalars.keys() == e_state.scalars.keys());
  for (const std::string& key : e_state.scalars.keys()) {
    INFO("optimizer scalar ", key);
    CHECK(a_state.scalars.at(key) == e_state.scalars.at(key));
  }
}

}  // namespace

TEST_CASE("compile: a capture that makes the optimizer's first step (no warm-up) replays later steps as eager") {
  for (const NamedOptimizer& kind : lazy_optimizers()) {
    INFO(kind.name);
    Model eager(kind.make), compiled(kind.make);
    auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                               {.fullgraph = true, .warmup_calls = 0});
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      const auto [x, y] = batch(call);
      CHECK(graph_test::max_relative_error(step(x, y), eager.step(x, y)) <= 1e-5);
      check_same(compiled, eager);
    }
    CHECK(step.state().captures_made() == 1);
    CHECK(step.state().replays() == 5);
  }
}

TEST_CASE("compile: a layer unfrozen after the capture gets its first optimizer step in a recompile, then as eager") {
  for (const NamedOptimizer& kind : lazy_optimizers()) {
    INFO(kind.name);
    Model eager(kind.make), compiled(kind.make);
    eager.freeze_first_layer(true);
    compiled.freeze_first_layer(true);
    auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                               {.fullgraph = true});
    for (int call = 0; call < 8; ++call) {
      INFO("call ", call);
      if (call == 3) {
        eager.freeze_first_layer(false);
        compiled.freeze_first_layer(false);
      }
      const auto [x, y] = batch(call);
      CHECK(graph_test::max_relative_error(step(x, y), eager.step(x, y)) <= 1e-5);
      check_same(compiled, eager);
    }
    CHECK(step.state().captures_made() == 2);  // the first capture, and the one the unfreezing asks for
    CHECK(step.state().replays() == 5);
  }
}

TEST_CASE("compile: parameters handed to the optimizer after the capture recompile, and are stepped as eager") {
  // A bias the step's loss uses but the optimizer does not step at first, then does: through
  // add_param_group, or pushed onto an existing group's list.
  for (const bool new_group : {true, false}) {
    INFO((new_group ? "add_param_group" : "params.push_back"));
    struct Linear {
      Tensor w, b;
      std::unique_ptr<optim::SGD> optimizer;
      Linear() {
        manual_seed(5);
        w = randn({8, 4}).requires_grad_();
        b = zeros({4}).requires_grad_();
        optimizer = std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions{.lr = 0.1});
      }
      void hand_over_bias(bool as_group) {
        if (as_group) optimizer->add_param_group({b});
        else optimizer->param_groups()[0].params.push_back(b);
      }
      Tensor step(const Tensor& x) {
        optimizer->zero_grad();
        b.set_grad({});
        Tensor loss = sum(tanh(add(mm(x, w), b)));
        loss.backward();
        optimizer->step();
        return loss.detach();
      }
    };
    Linear eager, compiled;
    auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      if (call == 3) {
        eager.hand_over_bias(new_group);
        compiled.hand_over_bias(new_group);
      }
      manual_seed(200 + static_cast<uint64_t>(call));
      const Tensor x = randn({6, 8});
      CHECK(graph_test::max_relative_error(step(x), eager.step(x)) <= 1e-5);
      CHECK(graph_test::max_relative_error(compiled.w, eager.w) <= 1e-5);
      CHECK(graph_test::max_relative_error(compiled.b, eager.b) <= 1e-5);
    }
    REQUIRE(step.state().recompile_reasons().size() == 1);
    CHECK(step.state().recompile_reasons()[0].find("SGD param group") != std::string::npos);
  }
}

}  // namespace test_compile_lazy_state
