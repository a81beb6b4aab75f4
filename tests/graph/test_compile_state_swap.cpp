// ember::compile when the owner of a state tensor replaces it between calls: the graph binds
// state by identity, so a replay must notice and recompile rather than read the old tensor.
// Loading an optimizer's state (resuming from a checkpoint with the step already compiled)
// replaces every moment buffer; loading a module's state copies into the parameters instead.
#include <doctest/doctest.h>

#include <string>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"

namespace test_compile_state_swap {

using namespace ember;

namespace {

struct Trainer {
  nn::Sequential model;
  std::unique_ptr<optim::Adam> optimizer;
  Trainer() {
    manual_seed(71);
    model = nn::Sequential(nn::Linear(5, 9), nn::Tanh(), nn::Linear(9, 2));
    optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 0.03});
  }
  Tensor step(const Tensor& x) {
    optimizer->zero_grad();
    Tensor loss = sum(mul(model->forward(x), model->forward(x)));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

// A checkpoint of its own: state_dict() shares the optimizer's live buffers.
optim::OptimizerState deep_copy(const optim::OptimizerState& state) {
  optim::OptimizerState copy;
  copy.scalars = state.scalars;
  for (const auto& [key, tensor] : state.tensors) copy.tensors.insert(key, tensor.clone());
  return copy;
}

Tensor batch(int call) {
  manual_seed(1700 + static_cast<uint64_t>(call));
  return randn({3, 5});
}

}  // namespace

TEST_CASE("compile: loading an optimizer's state between calls recompiles, and training goes on as eager") {
  Trainer compiled, eager, other;
  auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 8; ++call) {
    INFO("call ", call);
    if (call == 5) {
      // Resume from another run's optimizer state (new moment tensors) and its parameters.
      for (int k = 0; k < 3; ++k) other.step(batch(100 + k));
      const optim::OptimizerState state = other.optimizer->state_dict();
      compiled.optimizer->load_state_dict(state);
      eager.optimizer->load_state_dict(state);
      compiled.model->load_state_dict(other.model->state_dict());
      eager.model->load_state_dict(other.model->state_dict());
    }
    CHECK(graph_test::max_relative_error(step(batch(call)), eager.step(batch(call))) <= 1e-6);
    const std::vector<Tensor> a = compiled.model->parameters(), e = eager.model->parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("parameter ", i);
      CHECK(graph_test::max_relative_error(a[i], e[i]) <= 1e-6);
      CHECK(graph_test::max_relative_error(compiled.optimizer->state(a[i])->exp_avg_sq,
                                           eager.optimizer->state(e[i])->exp_avg_sq) <= 1e-6);
    }
  }
  CHECK(step.state().captures() == 2);  // the loaded moments are new tensors
  // The optimizer's own guard sees the load first; the graph's "no longer referenced" would too.
  CHECK(step.state().recompile_reasons().at(0).find("Adam param group 0") != std::string::npos);
}

TEST_CASE("compile: an optimizer state loaded while the old state_dict is still held recompiles") {
  // The state_dict() kept for logging shares the live moment buffers, so the replaced ones stay
  // referenced outside the graph: only the optimizer's own guard can tell they were replaced.
  Trainer compiled, eager;
  auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  optim::OptimizerState compiled_checkpoint, eager_checkpoint, still_held;
  for (int call = 0; call < 8; ++call) {
    INFO("call ", call);
    if (call == 2) {
      compiled_checkpoint = deep_copy(compiled.optimizer->state_dict());
      eager_checkpoint = deep_copy(eager.optimizer->state_dict());
    }
    if (call == 5) {
      still_held = compiled.optimizer->state_dict();
      compiled.optimizer->load_state_dict(compiled_checkpoint);
      eager.optimizer->load_state_dict(eager_checkpoint);
    }
    CHECK(graph_test::max_relative_error(step(batch(call)), eager.step(batch(call))) <= 1e-6);
  }
  CHECK(step.state().captures() == 2);
  CHECK(step.state().recompile_reasons().at(0).find("which no longer holds") != std::string::npos);
}

TEST_CASE("compile: a gradient hook registered on a parameter after the capture recompiles") {
  Trainer compiled, eager;
  auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 6; ++call) {
    INFO("call ", call);
    if (call == 3) {
      const auto halve = [](const Tensor& grad) { return mul(grad, 0.5); };
      compiled.model->parameters()[0].register_hook(halve);
      eager.model->parameters()[0].register_hook(halve);
    }
    CHECK(graph_test::max_relative_error(step(batch(call)), eager.step(batch(call))) <= 1e-6);
    CHECK(graph_test::max_relative_error(compiled.model->parameters()[0], eager.model->parameters()[0]) <= 1e-6);
  }
  REQUIRE(step.state().recompile_reasons().size() == 1);
  CHECK(step.state().recompile_reasons()[0].find("gradient hooks") != std::string::npos);
}

TEST_CASE("compile: a gradient hook removed from a parameter after the capture recompiles") {
  // Swapped for another (one removed, one registered) the count of live hooks is the same; the
  // guard still sees the change.
  for (const bool replace : {false, true}) {
    INFO(std::string(replace ? "removed and another registered" : "removed"));
    Trainer compiled, eager;
    const auto halve = [](const Tensor& grad) { return mul(grad, 0.5); };
    const auto triple = [](const Tensor& grad) { return mul(grad, 3.0); };
    const unsigned compiled_hook = compiled.model->parameters()[0].register_hook(halve);
    const unsigned eager_hook = eager.model->parameters()[0].register_hook(halve);
    auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      if (call == 3) {
        compiled.model->parameters()[0].remove_hook(compiled_hook);
        eager.model->parameters()[0].remove_hook(eager_hook);
        if (replace) {
          compiled.model->parameters()[0].register_hook(triple);
          eager.model->parameters()[0].register_hook(triple);
        }
      }
      CHECK(graph_test::max_relative_error(step(batch(call)), eager.step(batch(call))) <= 1e-6);
      CHECK(graph_test::max_relative_error(compiled.model->parameters()[0], eager.model->parameters()[0]) <= 1e-6);
    }
    REQUIRE(step.state().recompile_reasons().size() == 1);
    const std::string& reason = step.state().recompile_reasons()[0];
    INFO(reason);
    CHECK(reason.find(replace ? "has 1 gradient hooks (1 removed)" : "has 0 gradient hooks (1 removed)") !=
          std::string::npos);
    CHECK(reason.find("captured with 1 (0 removed)") != std::string::npos);
  }
}

TEST_CASE("compile: a gradient hook registered and removed inside the step is no graph break") {
  Trainer compiled, eager;
  const auto step_with_removed_hook = [](Trainer& trainer, const Tensor& x) {
    trainer.optimizer->zero_grad();
    Tensor out = trainer.model->forward(x);
    out.remove_hook(out.register_hook([](const Tensor& grad) { return mul(grad, 3.0); }));
    Tensor loss = sum(mul(out, out));
    loss.backward();
    trainer.optimizer->step();
    return loss.detach();
  };
  auto step = ember::compile([&](const Tensor& x) { return step_with_removed_hook(compiled, x); }, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    CHECK(graph_test::max_relative_error(step(batch(call)), step_with_removed_hook(eager, batch(call))) <= 1e-6);
    CHECK(graph_test::max_relative_error(compiled.model->parameters()[0], eager.model->parameters()[0]) <= 1e-6);
  }
  CHECK(step.state().captures() == 1);
  CHECK_FALSE(step.state().fell_back_to_eager());
}

TEST_CASE("compile: a hook registered and removed on a result's history inside the function is no graph break") {
  // The result keeps its history, so its backward runs after the call: the capture refuses a live
  // hook on that history (the replay would not run it), not the empty slot a removed one leaves.
  Trainer compiled, eager;
  const auto forward = [](Trainer& trainer, const Tensor& x) {
    Tensor hidden = trainer.model->forward(x);
    hidden.remove_hook(hidden.register_hook([](const Tensor& grad) { return mul(grad, 3.0); }));
    return mul(hidden, hidden);
  };
  auto step = ember::compile([&](const Tensor& x) { return forward(compiled, x); }, {.fullgraph = true});
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    compiled.model->zero_grad();
    eager.model->zero_grad();
    step(batch(call)).sum().backward();
    forward(eager, batch(call)).sum().backward();
    CHECK(graph_test::max_relative_error(compiled.model->parameters()[0].grad(), eager.model->parameters()[0].grad()) <=
          1e-6);
  }
  CHECK(step.state().captures() == 1);
  CHECK_FALSE(step.state().fell_back_to_eager());
}

}  // namespace test_compile_state_swap
