// ember::compile of a small CNN's training step: Conv2d with a border padding mode, a grouped
// strided Conv2d, ConvTranspose2d, Conv1d with "same", unfold/fold, then a Linear head and
// cross_entropy with Adam. Captured whole (fullgraph: the window indices come from arange on the
// device) and equal to eager step by step, parameters and optimizer state included.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/functional_conv.h"
#include "runtime/nn/modules/conv.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/sgd.h"

namespace test_compile_conv {

using namespace ember;

namespace {

struct SmallCnn {
  nn::Conv2d stem{nullptr}, down{nullptr};
  nn::ConvTranspose2d up{nullptr};
  nn::Conv1d mix{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::Adam> optimizer;

  SmallCnn() {
    manual_seed(311);
    stem = nn::Conv2d(3, 4, 3, {.padding = 1, .padding_mode = nn::ConvPaddingMode::Reflect});
    down = nn::Conv2d(4, 6, 3, {.stride = 2, .padding = 1, .groups = 2});
    up = nn::ConvTranspose2d(6, 2, 2, {.stride = 2});
    mix = nn::Conv1d(2, 2, 4, {.padding = "same", .bias = false});
    head = nn::Linear(2 * 64, 5);
    std::vector<Tensor> parameters;
    for (const auto* module : std::vector<const nn::Module*>{stem.get(), down.get(), up.get(), mix.get(), head.get()})
      for (const Tensor& parameter : module->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = 0.01});
  }

  // x [B, 3, 8, 8], target [B] class indices.
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor features = relu(down(relu(stem(x))));  // [B, 6, 4, 4]
    const Tensor upsampled = up(features);              // [B, 2, 8, 8]
    // A fold of unfold's columns: each pixel times the number of 2 x 2 windows covering it.
    const Tensor refolded = fold(unfold(upsampled, 2, {.padding = 1}), 8, 2, {.padding = 1});
    const Tensor rows = mix(reshape(refolded, {x.size(0), 2, 64}));  // [B, 2, 64]
    const Tensor loss = cross_entropy(head(flatten(rows, 1)), target);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a CNN training step (Conv2d, ConvTranspose2d, Conv1d, unfold/fold, Adam) equals eager") {
  SmallCnn eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                   {.fullgraph = true});
  double first_loss = 0.0, last_loss = 0.0;
  for (int step = 0; step < 6; ++step) {
    INFO("step ", step);
    manual_seed(3100 + static_cast<uint64_t>(step % 2));  // two batches, seen three times each
    const Tensor x = randn({2, 3, 8, 8});
    const Tensor target = from_vector<int64_t>({step % 2 == 0 ? 1 : 3, 4}, {2});
    const Tensor compiled_loss = train_step(x, target);
    const Tensor eager_loss = eager.step(x, target);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
    if (step == 0) first_loss = eager_loss.item();
    last_loss = eager_loss.item();
  }
  CHECK(last_loss < first_loss);  // it learns the two batches
  CHECK(train_step.state().replays() == 4);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

namespace {

// Conv2d - BatchNorm2d - ReLU - MaxPool2d - Conv2d - ReLU - AdaptiveAvgPool2d - Flatten - Linear,
// the digits CNN of tests/runtime/test_convergence_cnn.cpp, with SGD and momentum.
struct NormalizedCnn {
  nn::Sequential model{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  NormalizedCnn() {
    manual_seed(313);
    model = nn::Sequential(nn::Conv2d(1, 8, 3, {.padding = 1}), nn::BatchNorm2d(8), nn::ReLU(), nn::MaxPool2d(2),
                           nn::Conv2d(8, 12, 3, {.padding = 1}), nn::ReLU(), nn::AdaptiveAvgPool2d(1), nn::Flatten(),
                           nn::Linear(12, 10));
    optimizer = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
  }

  nn::BatchNorm2dImpl& batch_norm() const { return *model->at<nn::BatchNorm2dImpl>(1); }

  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    const Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: Conv2d, BatchNorm2d, MaxPool2d and AdaptiveAvgPool2d in one step equal eager, estimates too") {
  NormalizedCnn eager, compiled;
  auto train_step =
      ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); }, {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    manual_seed(3200 + static_cast<uint64_t>(step));
    const Tensor x = randn({6, 1, 8, 8});
    const Tensor y = randint(0, 10, {6});
    const Tensor compiled_loss = train_step(x, y);
    const Tensor eager_loss = eager.step(x, y);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 3);
  CHECK_FALSE(train_step.state().fell_back_to_eager());
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params, eager.optimizer->param_groups()[0].params);
  graph_test::check_same_values({compiled.batch_norm().running_mean, compiled.batch_norm().running_var},
                                {eager.batch_norm().running_mean, eager.batch_norm().running_var});
  CHECK(compiled.batch_norm().num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{5});
}

}  // namespace test_compile_conv
