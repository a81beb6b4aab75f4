// ember::compile (fullgraph) of a training step through BatchNorm2d and the pools: the 2-D batch
// norm's running estimates and count are state written back on every replay, as BatchNorm1d's
// (test_compile_batch_norm.cpp), and the step equals eager's losses, parameters and estimates.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/ember.h"
#include "runtime/functional_pool.h"
#include "runtime/nn/modules/batch_norm.h"
#include "runtime/nn/modules/pooling.h"

namespace test_compile_batch_norm_2d_pooling {

using namespace ember;

namespace {

// Linear(12, 60) viewed as [B, 2, 6, 5] - BatchNorm2d(2) - ReLU - MaxPool2d(3, 2, 1, ceil_mode) -
// AvgPool2d(2, 1) - Linear(8, 3), mean squared error, SGD with momentum.
struct ConvLikeNet {
  nn::Linear expand{nullptr};
  nn::BatchNorm2d norm{nullptr};
  nn::MaxPool2d max{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  explicit ConvLikeNet(std::optional<double> momentum) {
    manual_seed(61);
    expand = nn::Linear(12, 60);
    norm = nn::BatchNorm2d({.num_features = 2, .momentum = momentum});
    max = nn::MaxPool2d(3, {.stride = 2, .padding = 1, .ceil_mode = true});
    head = nn::Linear(8, 3);
    std::vector<Tensor> parameters = expand->parameters();
    for (const Tensor& parameter : norm->parameters()) parameters.push_back(parameter);
    for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  }

  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor planes = relu(norm(reshape(expand(x), {x.size(0), 2, 6, 5})));
    const Tensor pooled = avg_pool2d(max(planes), 2, {.stride = 1});  // [B, 2, 3, 2]
    const Tensor loss = mse_loss(head(reshape(adaptive_avg_pool2d(pooled, {2, 2}), {x.size(0), 8})), target);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through BatchNorm2d and pools gives eager's losses, parameters and estimates") {
  for (const std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    INFO("momentum ", momentum.value_or(-1.0));
    ConvLikeNet eager(momentum), compiled(momentum);
    auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                     {.fullgraph = true});
    constexpr int kSteps = 5;
    for (int step = 0; step < kSteps; ++step) {
      INFO("step ", step);
      manual_seed(700 + static_cast<uint64_t>(step));
      const Tensor x = add(randn({4, 12}), 0.5);
      const Tensor target = randn({4, 3});
      const Tensor compiled_loss = train_step(x, target);
      const Tensor eager_loss = eager.step(x, target);
      CHECK(std::isfinite(eager_loss.item()));
      CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
      CHECK(graph_test::max_relative_error(compiled.norm->running_mean, eager.norm->running_mean) <= 1e-5);
      CHECK(graph_test::max_relative_error(compiled.norm->running_var, eager.norm->running_var) <= 1e-5);
      CHECK(compiled.norm->num_batches_tracked.to_vector<int64_t>() ==
            std::vector<int64_t>{static_cast<int64_t>(step) + 1});
    }
    CHECK(train_step.state().captures() == 1);
    CHECK(train_step.state().replays() == kSteps - 2);  // one eager warm-up call, one capture
    CHECK_FALSE(train_step.state().fell_back_to_eager());
    graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                  eager.optimizer->param_groups()[0].params);
  }
}

}  // namespace test_compile_batch_norm_2d_pooling
