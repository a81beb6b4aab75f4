// ember::compile of a training step through max, avg and adaptive pools: captured whole (fullgraph:
// their window positions, counts and argmax come from arange and registry ops on the device,
// nothing reads values under a capture) and equal to eager step by step.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/functional_pool.h"
#include "runtime/nn/modules/pooling.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_pooling {

using namespace ember;

namespace {

struct Pooler {
  nn::Linear expand{nullptr};
  nn::MaxPool2d max{nullptr};
  nn::AdaptiveMaxPool2d adaptive_max{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  Pooler() {
    manual_seed(41);
    expand = nn::Linear(12, 60);
    max = nn::MaxPool2d(3, {.stride = 2, .padding = 1, .ceil_mode = true});
    adaptive_max = nn::AdaptiveMaxPool2d({1, 3});
    head = nn::Linear(14, 3);
    std::vector<Tensor> parameters = expand->parameters();
    for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.1});
  }

  // x [B, 12], target [B, 3].
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor planes = reshape(expand(x), {x.size(0), 2, 6, 5});
    const Tensor pooled = max(planes);                                                          // [B, 2, 4, 3]
    const Tensor averaged = avg_pool2d(pooled, 2, {.stride = 1, .padding = 1, .count_include_pad = false});  // 5 x 4
    const Tensor summary = flatten(adaptive_avg_pool2d(averaged, 2), 1);                        // [B, 8]
    const Tensor peaks = flatten(adaptive_max(averaged), 1);                                    // [B, 6]
    const Tensor loss = mse_loss(head(cat({summary, peaks}, 1)), target);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through max, avg and adaptive pools, captured whole, equals eager") {
  Pooler eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                   {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    manual_seed(530 + static_cast<uint64_t>(step));
    const Tensor x = randn({3, 12});
    const Tensor target = randn({3, 3});
    const Tensor compiled_loss = train_step(x, target);
    const Tensor eager_loss = eager.step(x, target);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 3);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_pooling
