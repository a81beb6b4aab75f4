// checkpoint_sequential inside ember::compile: the step captures whole (the recomputation too, with
// no graph break) and the compiled training steps match eager steps that do checkpoint. The
// recomputation itself is tested in test_compile_checkpoint_recompute.cpp.
#include <doctest/doctest.h>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/ember.h"

namespace test_compile_checkpoint {

using namespace ember;

namespace {

struct Trainer {
  nn::Sequential model;
  std::unique_ptr<optim::SGD> optimizer;
  Trainer() {
    manual_seed(91);
    model = nn::Sequential(nn::Linear(6, 10), nn::Tanh(), nn::Linear(10, 10), nn::GELU(), nn::Linear(10, 3));
    optimizer = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.05});
  }
  Tensor step(const Tensor& x) {
    optimizer->zero_grad();
    const Tensor out = utils::checkpoint_sequential(model, 2, x);
    Tensor loss = sum(mul(out, out));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

Tensor batch(int call) {
  manual_seed(500 + static_cast<uint64_t>(call));
  return randn({4, 6});
}

}  // namespace

TEST_CASE("compile: a training step that checkpoints its model captures whole and matches eager") {
  Trainer compiled, eager;
  auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    CHECK(graph_test::max_relative_error(step(batch(call)), eager.step(batch(call))) <= 1e-6);
    for (size_t i = 0; i < compiled.model->parameters().size(); ++i)
      CHECK(graph_test::max_relative_error(compiled.model->parameters()[i], eager.model->parameters()[i]) <= 1e-6);
  }
  CHECK(step.state().captures() == 1);
  CHECK_FALSE(step.state().fell_back_to_eager());
}

}  // namespace test_compile_checkpoint
