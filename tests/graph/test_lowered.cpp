// The lowered executor (flat step list over a planned arena): seed and wide MLP training steps equal
// eager bit for bit, the dispatching executor stays available, views / in-place updates / returned
// inputs keep their eager identity and values, and guards still recompile.
#include <doctest/doctest.h>

#include "graph/compile.h"
#include "graph/fusion.h"
#include "fusion_test_util.h"
#include "graph_test_util.h"
#include "skip_case.h"

namespace test_lowered {

using namespace ember;

namespace {

using graph_test::Mlp;

using graph_test::check_same_state;

// Trains `steps` batches eagerly and compiled (lowered or dispatching) side by side.
void train_side_by_side(const std::vector<int64_t>& widths, int64_t batch, int steps, bool lowered) {
  Mlp eager(7, widths), compiled(7, widths);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .lowered = lowered});
  for (int step = 0; step < steps; ++step) {
    if (step == steps / 2) {  // a scheduler's change of lr is read per call by both executors
      eager.optimizer->param_groups()[0].options.lr = 3e-3;
      compiled.optimizer->param_groups()[0].options.lr = 3e-3;
    }
    manual_seed(500 + static_cast<uint64_t>(step));
    const Tensor x = randn({batch, widths.front()});
    const Tensor y = randint(0, widths.back(), {batch});
    const Tensor expected = eager.step(x, y);
    const Tensor actual = train_step(x, y);
    INFO("step ", step);
    CHECK(graph_test::bit_equal(expected, actual));
  }
  CHECK(train_step.state().captures() == 1);
  REQUIRE(train_step.state().executor() != nullptr);
  CHECK((train_step.state().executor()->memory_plan() != nullptr) == lowered);
  // The per-parameter Adam updates run as one multi-tensor call (lowered_optimizer_runs.cpp).
  const int parameters = static_cast<int>(compiled.model->parameters().size());
  CHECK(train_step.state().executor()->optimizer_runs() == (lowered ? std::vector<int>{parameters} : std::vector<int>{}));
  check_same_state(eager, compiled);
}

// True when CUDA graphs can run here; otherwise the case is reported as skipped.
bool cuda_graphs_or_skip() {
  std::string why_not;
  if (graph::CudaGraphReplay::available(&why_not)) return true;
  ember::testing::skip_gpu_case("CUDA graphs unavailable: " + why_not);
  return false;
}

}  // namespace

TEST_CASE("lowered: 200 seed-MLP steps equal eager bit for bit (losses, params, grads, Adam state)") {
  train_side_by_side({100, 256, 10}, 32, 200, /*lowered=*/true);
}

TEST_CASE("lowered: the dispatching executor is still available and equals eager") {
  train_side_by_side({100, 256, 10}, 32, 20, /*lowered=*/false);
}

TEST_CASE("lowered: 20 wide-MLP steps equal eager bit for bit") {
  train_side_by_side({784, 1024, 1024, 1024, 10}, 256, 20, /*lowered=*/true);
}

TEST_CASE("lowered: optimizer runs split where param groups' attributes differ, SGD runs too") {
  for (bool adam : {true, false}) {
    CAPTURE(adam);
    // Two param groups: the first layer's lr changes mid-way (a scheduler), the second's differs.
    auto build = [&](nn::Sequential& model) -> std::unique_ptr<optim::Optimizer> {
      manual_seed(11);
      model = nn::Sequential(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 3));
      std::vector<Tensor> first = (*model)[0]->parameters(), second = (*model)[2]->parameters();
      if (adam) {
        auto optimizer = std::make_unique<optim::Adam>(first, optim::AdamOptions{.lr = 1e-2});
        optimizer->add_param_group(second, optim::AdamOptions{.lr = 3e-2, .weight_decay = 0.1});
        return optimizer;
      }
      auto optimizer = std::make_unique<optim::SGD>(first, optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
      optimizer->add_param_group(second, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
      return optimizer;
    };
    nn::Sequential eager_model, compiled_model;
    std::unique_ptr<optim::Optimizer> eager_optimizer = build(eager_model), compiled_optimizer = build(compiled_model);
    auto step = [](nn::Sequential& model, optim::Optimizer& optimizer, const Tensor& x, const Tensor& y) {
      optimizer.zero_grad();
      Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      optimizer.step();
      return loss;
    };
    auto train_step = ember::compile(
        [&](const Tensor& x, const Tensor& y) { return step(compiled_model, *compiled_optimizer, x, y); },
        {.fullgraph = true});
    for (int i = 0; i < 12; ++i) {
      if (i == 6)
        for (optim::Optimizer* optimizer : {eager_optimizer.get(), compiled_optimizer.get()})
          optimizer->set_lr(0, 0.2 * optimizer->get_lr(0));
      manual_seed(40 + static_cast<uint64_t>(i));
      const Tensor x = randn({5, 6});
      const Tensor y = randint(0, 3, {5});
      INFO("step ", i);
      CHECK(graph_test::bit_equal(step(eager_model, *eager_optimizer, x, y), train_step(x, y)));
    }
    REQUIRE(train_step.state().executor() != nullptr);
    CHECK(train_step.state().executor()->optimizer_runs() == std::vector<int>{4});
    const std::vector<Tensor> expected = eager_model->parameters(), actual = compiled_model->parameters();
    for (size_t i = 0; i < expected.size(); ++i) CHECK(graph_test::bit_equal(expected[i], actual[i]));
  }
}

TEST_CASE("lowered: views, in-place state updates, returned inputs and fresh results per call") {
  Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f, 0.75f, 1.5f, -0.5f}, {2, 3});
  Tensor eager_weight = weight.clone();
  auto body = [](const Tensor& x, Tensor& w) {
    Tensor scaled = (x * w).t();  // a view of an arena value feeds the next op
    Tensor out = (scaled * 2.0).neg().t();
    {
      NoGradGuard no_grad;
      w.mul_(0.5);                // an in-place update of state, written back by identity
    }
    return out.sum(Dims{0});
  };
  auto compiled = ember::compile([&](const Tensor& x) { return body(x, weight); }, {.warmup_calls = 0});
  // A row slice with a storage offset: the input's geometry is re-read each call.
  const Tensor data = from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -2, -3}, {4, 3});
  std::vector<Tensor> kept;
  for (int call = 0; call < 3; ++call) {
    const Tensor x = data.slice(0, call, call + 2);
    const Tensor expected = body(x, eager_weight);
    const Tensor actual = compiled(x);
    CHECK(graph_test::bit_equal(expected, actual));
    CHECK(graph_test::bit_equal(eager_weight, weight));
    kept.push_back(actual);
  }
  // Call 1 passes another slice of `data`, the captured one's storage alive: it is traced once to
  // learn that fn reads it only as its argument; call 2 replays.
  CHECK(compiled.state().replays() == 1);
  CHECK(compiled.state().captures() == 1);
  REQUIRE(compiled.state().executor()->memory_plan() != nullptr);
  // Results the caller kept are not overwritten by later calls (they never live in the arena).
  CHECK(!kept[0].is_same(kept[1]));
  CHECK(kept[0].to_vector<float>() != kept[1].to_vector<float>());
  // A function returning its input returns that very tensor, as eager does.
  auto identity = ember::compile([](const Tensor& x) { return x; }, {.warmup_calls = 0});
  const Tensor x = data.slice(0, 1, 3);
  identity(x);
  CHECK(identity(x).is_same(x));
}

TEST_CASE("lowered: a replay that throws in the forward leaves the accumulated .grad as eager does") {
  // Gradient accumulation: fn runs backward() but no optimizer step, so each call adds to .grad,
  // which the graph reads as an input. A bad target then fails the forward, before backward.
  struct Accumulating {
    nn::Linear layer{nullptr};
    Accumulating() {
      manual_seed(7);
      layer = nn::Linear(4, 3);
    }
    Tensor step(const Tensor& x, const Tensor& y) {
      Tensor loss = cross_entropy(layer->forward(x), y);
      loss.backward();
      return loss.detach();
    }
  };
  Accumulating compiled, eager;
  auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); });
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    manual_seed(100 + static_cast<uint64_t>(call));
    const Tensor x = randn({5, 4});
    const Tensor y = call == 3 ? from_vector(std::vector<int64_t>{0, 1, 9, 2, 1}, {5}) : randint(0, 3, {5});
    if (call == 3) {
      CHECK_THROWS_AS(step(x, y), Error);
      CHECK_THROWS_AS(eager.step(x, y), Error);
    } else {
      step(x, y);
      eager.step(x, y);
    }
    REQUIRE(compiled.layer->weight.grad().defined());
    CHECK(graph_test::max_relative_error(compiled.layer->weight.grad(), eager.layer->weight.grad()) <= 1e-6);
  }
  CHECK(step.state().replays() >= 2);
}

TEST_CASE("lowered: a batch of 0 rows replays, every intermediate empty") {
  // Every intermediate has 0 bytes, so the planned arena has none: its values still need a buffer.
  const Tensor weight = randn({4, 3});
  auto through_gemm = ember::compile([&](const Tensor& x) { return sum(relu(matmul(x, weight))); });
  auto through_softmax = ember::compile([&](const Tensor& x) { return sum(softmax(x, 1)); });
  for (int call = 0; call < 3; ++call) {
    CHECK(through_gemm(randn({0, 4})).item() == 0.0);
    CHECK(through_softmax(randn({0, 4})).item() == 0.0);
  }
  CHECK(through_gemm.state().replays() == 1);
  CHECK(through_softmax.state().replays() == 1);

  // A training step on an empty batch: one capture, then replays (its empty saved activations
  // are graph values, not state that fails the next call's guards), and the parameters as eager.
  Mlp eager(7, {4, 6, 3}), trained(7, {4, 6, 3});
  auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return trained.step(x, y); });
  for (int call = 0; call < 4; ++call) {
    const Tensor x = randn({0, 4});
    const Tensor y = randint(0, 3, {0});
    step(x, y);
    eager.step(x, y);
  }
  CHECK(step.state().captures_made() == 1);
  CHECK(step.state().replays() == 2);
  check_same_state(eager, trained);
}

TEST_CASE("lowered: an in-place update of a returned view of an intermediate follows autograd as eager") {
  manual_seed(1);
  nn::Linear layer(4, 6);
  auto forward = [&](const Tensor& x) { return layer->forward(x).view({-1, 2, 3}); };
  auto compiled = ember::compile(forward);
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    const Tensor x = randn({5, 4});
    layer->zero_grad();
    Tensor eager_result = forward(x);
    eager_result.mul_(0.5);
    eager_result.sum().backward();
    const Tensor eager_grad = layer->weight.grad().clone();
    layer->zero_grad();
    Tensor result = compiled(x);
    result.mul_(0.5);
    result.sum().backward();
    CHECK(graph_test::max_relative_error(layer->weight.grad(), eager_grad) <= 1e-6);
  }
  CHECK(compiled.state().replays() == 1);
}

TEST_CASE("lowered: a new input shape recompiles into a new lowered executor") {
  Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f}, {3});
  auto scaled = ember::compile([&](const Tensor& x) { return (x * weight).exp().sum(Dims{1}); }, {.warmup_calls = 0});
  const Tensor small = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  manual_seed(11);
  const Tensor wider = randn({40, 3});
  const Tensor first = scaled(small);
  const int64_t small_arena = scaled.state().executor()->memory_plan()->unshared_bytes;
  const Tensor second = scaled(wider);
  REQUIRE(scaled.state().recompile_reasons().size() == 1);
  CHECK(scaled.state().captures() == 2);
  CHECK(scaled.state().executor()->memory_plan()->unshared_bytes > small_arena);
  CHECK(graph_test::bit_equal(scaled(small), first));
  CHECK(graph_test::bit_equal(scaled(wider), second));
  CHECK(scaled.state().replays() == 2);
}

TEST_CASE("cuda lowered: default and reduce_overhead modes run fused kernels and batched Adam, and match eager on the seed MLP") {
  if (!cuda_graphs_or_skip()) return;
  const Device cuda = Device::parse("cuda");
  // reduce_overhead first: its capture must not depend on work an earlier compile did.
  for (const char* mode : {"reduce_overhead", "default"}) {
    CAPTURE(mode);
    Mlp eager(7, {100, 256, 10}, cuda), compiled(7, {100, 256, 10}, cuda);
    auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                     {.fullgraph = true, .mode = mode});
    std::vector<Tensor> losses;
    for (int step = 0; step < 12; ++step) {
      manual_seed(500 + static_cast<uint64_t>(step));
      const Tensor x = randn({32, 100}).to(cuda);
      const Tensor y = randint(0, 10, {32}).to(cuda);
      const Tensor expected = eager.step(x, y);
      const Tensor actual = train_step(x, y);
      losses.push_back(actual);
      INFO("step ", step);
      // The fused relu_backward+sum adds the bias gradient in another order than eager's reduction.
      CHECK(graph_test::max_relative_error(actual.to(kCPU), expected.to(kCPU)) <= 1e-5);
    }
    REQUIRE(train_step.state().executor() != nullptr);
    CHECK(train_step.state().executor()->uses_cuda_graphs() == (std::string(mode) == "reduce_overhead"));
    // The hidden layer's backward runs as a generated CUDA kernel (graph/cuda/fused_cuda_program.h),
    // the four Adam updates as one multi-tensor launch (graph/lowered_optimizer_runs.cpp).
    const std::vector<const graph::FusedOpDef*> fused = graph::fused_ops(*train_step.state().graph());
    CHECK(!fused.empty());
    for (const graph::FusedOpDef* op : fused) CHECK((op->kernel_for(cuda) != nullptr));
    CHECK(train_step.state().executor()->optimizer_runs() == std::vector<int>{4});
    // Returned losses are cloned out of the graph's buffers: earlier ones are not overwritten.
    CHECK(losses[2].to(kCPU).item() != losses[11].to(kCPU).item());
    const std::vector<Tensor> expected = eager.model->parameters(), actual = compiled.model->parameters();
    for (size_t i = 0; i < expected.size(); ++i)
      CHECK(graph_test::max_relative_error(actual[i].to(kCPU), expected[i].to(kCPU)) <= 1e-5);
  }
}

TEST_CASE("cuda lowered: reduce_overhead runs host copies between graphs and does not capture in-place updates of inputs") {
  if (!cuda_graphs_or_skip()) return;
  const Device cuda = Device::parse("cuda");
  manual_seed(41);
  const Tensor weight = randn({8, 8}).to(cuda);
  // The upload synchronizes with the host, which a capture forbids: it runs between segments.
  const auto forward = [&](const Tensor& x_on_host) { return relu(matmul(x_on_host.to(cuda), weight)); };
  auto upload = ember::compile(forward, {.fullgraph = true, .mode = "reduce_overhead"});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    const Tensor x = randn({4, 8}, {.device = kCPU});  // a host tensor, whatever the default device
    CHECK(graph_test::max_relative_error(upload(x).to(kCPU), forward(x).to(kCPU)) <= 1e-6);
  }
  CHECK(upload.state().executor()->uses_cuda_graphs());
  // Captured kernels would update a staged copy of x: the graph runs without CUDA graphs instead,
  // and the caller's tensor is updated as in eager mode.
  auto scale = ember::compile(
      [](const Tensor& x) {
        Tensor target = x;
        target.mul_(2.0);
        return x + 1.0;
      },
      {.fullgraph = true, .mode = "reduce_overhead"});
  Tensor x = ones({4}).to(cuda);
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    const Tensor result = scale(x);
    const double doubled = std::pow(2.0, call + 1);
    CHECK(x.to(kCPU).to_vector<float>() == std::vector<float>(4, static_cast<float>(doubled)));
    CHECK(result.to(kCPU).to_vector<float>() == std::vector<float>(4, static_cast<float>(doubled + 1.0)));
  }
  CHECK_FALSE(scale.state().executor()->uses_cuda_graphs());
  CHECK(scale.state().executor()->why_no_cuda_graphs().find("updates graph input 0 in place") != std::string::npos);
}

}  // namespace test_lowered
