// ember::compile of a training step through pad (each mode), nn::GroupNorm and nn::RMSNorm:
// captured whole (fullgraph: pad's indices come from arange on the device, nothing reads values
// under a capture) and equal to eager step by step.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_norms_pad {

using namespace ember;

namespace {

struct Normalizer {
  nn::GroupNorm group{nullptr};
  nn::RMSNorm rms{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  Normalizer() {
    manual_seed(93);
    group = nn::GroupNorm(2, 4);
    rms = nn::RMSNorm(10);
    head = nn::Linear(10, 3);
    std::vector<Tensor> parameters = group->parameters();
    for (const Tensor& parameter : rms->parameters()) parameters.push_back(parameter);
    for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.1});
  }

  // x [B, 4, 6], target [B, 4, 3].
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor reflected = pad(x, {2, 1}, PadMode::Reflect);                   // [B, 4, 9]
    const Tensor wrapped = pad(reflected, {1, 0}, PadMode::Circular);            // [B, 4, 10]
    const Tensor edged = pad(group(wrapped), {0, 0, 1, 1}, PadMode::Replicate);  // [B, 6, 10]
    const Tensor cropped = pad(edged, {0, 0, -1, -1}, PadMode::Constant);        // [B, 4, 10]
    const Tensor loss = mse_loss(head(rms(cropped)), target);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through pad, GroupNorm and RMSNorm, captured whole, equals eager") {
  Normalizer eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                   {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    manual_seed(970 + static_cast<uint64_t>(step));
    const Tensor x = randn({2, 4, 6});
    const Tensor target = randn({2, 4, 3});
    const Tensor compiled_loss = train_step(x, target);
    const Tensor eager_loss = eager.step(x, target);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 3);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_norms_pad
