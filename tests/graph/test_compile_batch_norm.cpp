// ember::compile over a training step whose model holds nn::BatchNorm1d: the running estimates and
// num_batches_tracked are state the step reads and updates in place, so the compiled step must
// write them back; over several steps it must give eager's losses, parameters and estimates. A
// compiled forward captured in train mode must not replay in eval mode (the flag is guarded).
// Its momentum is guarded likewise (set_momentum, which update_bn uses).
#include <doctest/doctest.h>

#include <memory>
#include <optional>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/ember.h"

namespace test_compile_batch_norm {

using namespace ember;

namespace {

// Linear(6, 16) - BatchNorm1d(16) - ReLU - Linear(16, 4), cross entropy, SGD with momentum.
struct BatchNormMlp {
  nn::Sequential model;
  nn::CrossEntropyLoss criterion;
  std::unique_ptr<optim::SGD> optimizer;

  explicit BatchNormMlp(std::optional<double> momentum) {
    manual_seed(5);
    model = nn::Sequential(nn::Linear(6, 16), nn::BatchNorm1d({.num_features = 16, .momentum = momentum}), nn::ReLU(),
                           nn::Linear(16, 4));
    optimizer = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = criterion(model->forward(x), y);
    loss.backward();
    optimizer->step();
    return loss;
  }
  nn::BatchNorm1dImpl& batch_norm() const { return *model->at<nn::BatchNorm1dImpl>(1); }
};

std::pair<Tensor, Tensor> batch(int index) {
  manual_seed(300 + static_cast<uint64_t>(index));
  return {add(randn({8, 6}), 0.5), randint(0, 4, {8})};
}

constexpr double kTolerance = 1e-6;  // fused kernels round some sums differently from eager

void check_same_state(const BatchNormMlp& compiled, const BatchNormMlp& eager) {
  const std::vector<Tensor> actual = compiled.model->parameters();
  const std::vector<Tensor> expected = eager.model->parameters();
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("parameter ", i);
    CHECK(graph_test::max_relative_error(actual[i], expected[i]) <= kTolerance);
  }
  CHECK(graph_test::max_relative_error(compiled.batch_norm().running_mean, eager.batch_norm().running_mean) <=
        kTolerance);
  CHECK(graph_test::max_relative_error(compiled.batch_norm().running_var, eager.batch_norm().running_var) <=
        kTolerance);
  CHECK(compiled.batch_norm().num_batches_tracked.to_vector<int64_t>() ==
        eager.batch_norm().num_batches_tracked.to_vector<int64_t>());
}

// One call of the compiled forward of `compiled`'s model against `eager`'s forward: the same output
// and the same state after.
template <typename Compiled>
void predict_both(Compiled& predict, const BatchNormMlp& compiled, BatchNormMlp& eager, int call) {
  const Tensor x = batch(call).first;
  CHECK(graph_test::max_relative_error(predict(x), eager.model->forward(x)) <= kTolerance);
  check_same_state(compiled, eager);
}

}  // namespace

TEST_CASE("compile: a training step with BatchNorm1d gives eager's losses, parameters and running estimates") {
  for (const std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    INFO("momentum ", momentum.value_or(-1.0));
    BatchNormMlp eager(momentum), compiled(momentum);
    auto train_step =
        ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); }, {.fullgraph = true});
    constexpr int kSteps = 5;
    for (int step = 0; step < kSteps; ++step) {
      INFO("step ", step);
      const auto [x, y] = batch(step);
      const Tensor expected = eager.step(x, y);
      const Tensor actual = train_step(x, y);
      CHECK(graph_test::max_relative_error(actual, expected) <= kTolerance);
      check_same_state(compiled, eager);
    }
    CHECK(compiled.batch_norm().num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{kSteps});
    CHECK(train_step.state().captures() == 1);
    CHECK(train_step.state().replays() == kSteps - 2);  // one eager warm-up call, one capture
    CHECK_FALSE(train_step.state().fell_back_to_eager());
  }
}

TEST_CASE("compile: a BatchNorm1d forward captured in train mode recompiles in eval mode and back") {
  BatchNormMlp eager(0.1), compiled(0.1);
  auto predict = ember::compile([&](const Tensor& x) { return compiled.model->forward(x); }, {.fullgraph = true});
  auto run_both = [&](int call) { predict_both(predict, compiled, eager, call); };
  for (int call = 0; call < 3; ++call) run_both(call);  // warm-up, capture in train mode, replay
  eager.model->eval();
  compiled.model->eval();
  for (int call = 3; call < 5; ++call) run_both(call);  // recompiles once, then replays
  REQUIRE(predict.state().recompile_reasons().size() == 1);
  CHECK(predict.state().recompile_reasons()[0] ==
        "the graph was captured with BatchNorm1d(16, eps=1e-05, momentum=0.1, affine=True, "
        "track_running_stats=True).training == true, which no longer holds");
  CHECK(compiled.batch_norm().num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{3});
  eager.model->train();
  compiled.model->train();
  run_both(5);  // the train variant again, without a third capture
  CHECK(predict.state().captures() == 2);
  CHECK(compiled.batch_norm().num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{4});
}

TEST_CASE("compile: a BatchNorm1d forward captured with one momentum recompiles after set_momentum") {
  // The momentum is baked into the captured update of the estimates; update_bn's set_momentum(nullopt)
  // must not replay the old blend.
  BatchNormMlp eager(0.1), compiled(0.1);
  auto predict = ember::compile([&](const Tensor& x) { return compiled.model->forward(x); }, {.fullgraph = true});
  auto run_both = [&](int call) { predict_both(predict, compiled, eager, call); };
  for (int call = 0; call < 3; ++call) run_both(call);  // warm-up, capture, replay
  eager.batch_norm().set_momentum(std::nullopt);
  compiled.batch_norm().set_momentum(std::nullopt);
  for (int call = 3; call < 5; ++call) run_both(call);  // recompiles once, then replays
  REQUIRE(predict.state().recompile_reasons().size() == 1);
  CHECK(predict.state().recompile_reasons()[0] ==
        "the graph was captured with BatchNorm1d.momentum == 0.1, which no longer holds");
  CHECK(predict.state().captures() == 2);
}

}  // namespace test_compile_batch_norm
