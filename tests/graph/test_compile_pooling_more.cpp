// ember::compile of a training step through max_pool -> max_unpool, lp_pool, local_response_norm,
// channel_shuffle and Softmax2d: captured whole (fullgraph: max_unpool's sort, gather and
// scatter_add and the others' pools read no values under a capture) and equal to eager.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_pooling_more {

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct Network {
  nn::Linear expand{nullptr};
  nn::MaxUnpool2d unpool{nullptr};
  nn::LPPool2d lp{nullptr};
  nn::LocalResponseNorm norm{nullptr};
  nn::ChannelShuffle shuffle{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  Network() {
    manual_seed(43);
    expand = nn::Linear(6, 4 * 4 * 4);
    unpool = nn::MaxUnpool2d(2);
    lp = nn::LPPool2d(2, 2, {.stride = 1});
    norm = nn::LocalResponseNorm(3);
    shuffle = nn::ChannelShuffle(2);
    head = nn::Linear(4 * 3 * 3, 2);
    std::vector<Tensor> parameters = expand->parameters();
    for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.05});
  }

  // x [B, 6], target [B, 2].
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor planes = reshape(expand(x), {x.size(0), 4, 4, 4});
    const auto [pooled, indices] = max_pool2d_with_indices(planes, 2);  // [B, 4, 2, 2]
    const Tensor restored = unpool(pooled, indices);                     // [B, 4, 4, 4]
    const Tensor mixed = shuffle(norm(restored));
    const Tensor features = nn::Softmax2d()(lp(mixed));  // [B, 4, 3, 3]
    const Tensor loss = mse_loss(head(flatten(features, 1)), target);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a step through max_unpool, lp_pool, local_response_norm and channel_shuffle equals eager") {
  Network eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                   {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    manual_seed(610 + static_cast<uint64_t>(step));
    const Tensor x = randn({3, 6});
    const Tensor target = randn({3, 2});
    const Tensor compiled_loss = train_step(x, target);
    const Tensor eager_loss = eager.step(x, target);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() >= 3);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_pooling_more
