// ember::compile: compiled training steps equal eager ones (losses, parameters, Adam and SGD
// state, bit for bit, since replay calls the same kernels), per-call host scalars, guards and
// recompiles, the cache limit and fullgraph errors.
#include <doctest/doctest.h>

#include "graph/capture.h"
#include "graph/compile.h"
#include "graph/segments.h"
#include "graph_test_util.h"

namespace test_compile {

using namespace ember;
using graph_test::check_same_state;
using graph_test::SeedMlp;

TEST_CASE("compile: 200 seed-MLP training steps equal eager bit for bit, including a changing lr") {
  SeedMlp eager(3), compiled(3);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true});
  for (int step = 0; step < 200; ++step) {
    // A scheduler-like change of the learning rate must be read per call, not recompile.
    if (step == 100) {
      eager.optimizer->param_groups()[0].options.lr = 3e-3;
      compiled.optimizer->param_groups()[0].options.lr = 3e-3;
    }
    auto [x, y] = graph_test::batch(step);
    const Tensor expected = eager.step(x, y);
    const Tensor actual = train_step(x, y);
    INFO("step ", step);
    CHECK(graph_test::bit_equal(expected, actual));
  }
  CHECK(train_step.state().captures() == 1);
  CHECK(train_step.state().replays() == 198);  // one warm-up call, one capture
  CHECK(train_step.state().recompile_reasons().empty());
  check_same_state(eager, compiled);
  // The losses moved: the comparison is not between two untrained models.
  auto [x, y] = graph_test::batch(0);
  CHECK(eager.step(x, y).item() < 2.2);
}

TEST_CASE("compile: SGD with momentum and zero_grad(set_to_none=false) equals eager") {
  auto make = [](uint64_t seed) {
    manual_seed(seed);
    return nn::Sequential(nn::Linear(100, 32), nn::Tanh(), nn::Linear(32, 10));
  };
  nn::Sequential eager_model = make(5), compiled_model = make(5);
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD compiled_opt(compiled_model->parameters(), {.lr = 0.05, .momentum = 0.9});
  auto run = [](nn::Sequential& model, optim::SGD& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad(/*set_to_none=*/false);
    Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) {
    return run(compiled_model, compiled_opt, x, y);
  });
  for (int step = 0; step < 12; ++step) {
    if (step == 6) {
      eager_opt.param_groups()[0].options.lr = 0.01;
      compiled_opt.param_groups()[0].options.lr = 0.01;
    }
    auto [x, y] = graph_test::batch(step, 16);
    CHECK(graph_test::bit_equal(run(eager_model, eager_opt, x, y), train_step(x, y)));
  }
  CHECK(train_step.state().replays() == 10);
  const std::vector<Tensor> expected = eager_model->parameters(), actual = compiled_model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(graph_test::bit_equal(expected[i], actual[i]));
    CHECK(graph_test::bit_equal(expected[i].grad(), actual[i].grad()));
    CHECK(graph_test::bit_equal(eager_opt.state(expected[i])->momentum_buffer,
                                compiled_opt.state(actual[i])->momentum_buffer));
  }
}

TEST_CASE("compile: a new batch size or grad mode recompiles with the reason, past the limit it runs eagerly") {
  Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f}, {3});
  // Static shapes: a new size is a variant of its own (test_dynamic_shapes.cpp has the others).
  auto scaled = ember::compile([&](const Tensor& x) { return (x * weight).sum(Dims{1}); },
                               {.cache_limit = 2, .warmup_calls = 0, .dynamic = false});
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(scaled(x).to_vector<float>() == std::vector<float>{4.0f, 7.75f});
  CHECK(scaled(x).to_vector<float>() == std::vector<float>{4.0f, 7.75f});  // replayed
  CHECK(scaled.state().replays() == 1);
  const Tensor wider = from_vector<float>({1, 2, 3, 4, 5, 6, -1, -2, -3}, {3, 3});
  CHECK(scaled(wider).to_vector<float>() == std::vector<float>{4.0f, 7.75f, -4.0f});
  REQUIRE(scaled.state().recompile_reasons().size() == 1);
  CHECK(scaled.state().recompile_reasons()[0] ==
        "input 0 is [3, 3] float32 on cpu, the graph was captured for [2, 3] float32 on cpu");
  {
    NoGradGuard no_grad;
    CHECK(scaled(x).to_vector<float>() == std::vector<float>{4.0f, 7.75f});
  }
  REQUIRE(scaled.state().recompile_reasons().size() == 2);
  CHECK(scaled.state().recompile_reasons()[1] == "grad mode is off, the graph was captured with it on");
  CHECK(scaled.state().fell_back_to_eager());
  CHECK(scaled.state().captures() == 2);
  // The limit reached, the function still gives the right answers eagerly.
  weight.mul_(2.0);
  CHECK(scaled(x).to_vector<float>() == std::vector<float>{8.0f, 15.5f});
}

// A CUDA graph replay keeps the compute type its GEMMs were captured with, so the TF32 switch is
// a guard like grad mode: flipping it recompiles (on every device, for one rule).
TEST_CASE("compile: set_allow_tf32 after capture recompiles with the reason") {
  const bool before = get_allow_tf32();
  set_allow_tf32(false);
  const Tensor weight = from_vector<float>({1, 2, 3, 4}, {2, 2});
  auto project = ember::compile([&](const Tensor& x) { return matmul(x, weight); }, {.warmup_calls = 0});
  const Tensor x = from_vector<float>({1, 1}, {1, 2});
  CHECK(project(x).to_vector<float>() == std::vector<float>{4.0f, 6.0f});
  set_allow_tf32(true);
  CHECK(project(x).to_vector<float>() == std::vector<float>{4.0f, 6.0f});
  set_allow_tf32(before);
  REQUIRE(project.state().recompile_reasons().size() == 1);
  CHECK(project.state().recompile_reasons()[0] == "allow_tf32 is on, the graph was captured with it off");
}

TEST_CASE("compile: replay reads state by identity, so an in-place change outside is seen") {
  Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f}, {3});
  auto scaled = ember::compile([&](const Tensor& x) { return x * weight; }, {.warmup_calls = 0});
  const Tensor x = from_vector<float>({1, 2, 3}, {3});
  CHECK(scaled(x).to_vector<float>() == std::vector<float>{0.5f, -2.5f, 6.0f});
  weight.mul_(-2.0);
  CHECK(scaled(x).to_vector<float>() == std::vector<float>{-1.0f, 5.0f, -12.0f});
  CHECK(scaled.state().replays() == 1);
}

TEST_CASE("compile: fullgraph errors name the op and the reason") {
  auto reads_host = ember::compile([](const Tensor& x) {
    const double total = (x * x).sum().item();
    return x * total;
  }, {.fullgraph = true, .warmup_calls = 0});
  const Tensor x = from_vector<float>({1, 2}, {2});
  CHECK_THROWS_WITH_AS(reads_host(x), doctest::Contains("graph break: item() reads the values of %2 (from sum)"),
                       graph::GraphBreak);
  auto lenient = ember::compile([](const Tensor& x) {
    const double total = (x * x).sum().item();
    return x * total;
  }, {.compile_every_segment = true, .warmup_calls = 0});
  CHECK(lenient(x).to_vector<float>() == std::vector<float>{5.0f, 10.0f});
  CHECK_FALSE(lenient.state().fell_back_to_eager());
  // Later calls run as segments: (x * x).sum() compiled, ended by item(); x * total alone is one
  // kernel, which runs as it is.
  CHECK(lenient(x * 2.0).to_vector<float>() == std::vector<float>{40.0f, 80.0f});
  REQUIRE(lenient.state().segments() != nullptr);
  CHECK(lenient.state().segmented_calls() == 1);
  CHECK(lenient.state().segments()->segments() == 1);
  CHECK(lenient.state().segments()->compiled_runs() == 1);
  CHECK(lenient.state().segments()->kernel_runs() == 1);
}

TEST_CASE("compile: nonzero reads values on the host, a graph break as item() is (fullgraph refuses it)") {
  const auto positions = [](const Tensor& x) { return nonzero(x * 2.0).reshape({-1}); };
  auto strict = ember::compile(positions, {.fullgraph = true, .warmup_calls = 0});
  const Tensor x = from_vector<float>({0, 1, 0, 3}, {4});
  CHECK_THROWS_WITH_AS(strict(x), doctest::Contains("graph break: nonzero() reads the values of"), graph::GraphBreak);
  auto lenient = ember::compile(positions, {.compile_every_segment = true, .warmup_calls = 0});
  CHECK(lenient(x).to_vector<int64_t>() == std::vector<int64_t>{1, 3});
  // A later call must not replay the first call's result: the values differ, so do the indices.
  CHECK(lenient(from_vector<float>({5, 0, 0, 0}, {4})).to_vector<int64_t>() == std::vector<int64_t>{0});
  CHECK_FALSE(lenient.state().fell_back_to_eager());
}

TEST_CASE("compile: a learning rate set inside the compiled function is a graph break, not a frozen lr") {
  // A replay runs the graph, not fn's host code, so an lr changed inside fn would stay at the
  // captured value: silently different training. Between calls it is fine (the first test).
  auto decaying_step = [](SeedMlp& mlp, const Tensor& x, const Tensor& y) {
    mlp.optimizer->set_lr(0, 0.5 * mlp.optimizer->get_lr(0));
    return mlp.step(x, y);
  };
  SeedMlp strict(3);
  auto fullgraph = ember::compile([&](const Tensor& x, const Tensor& y) { return decaying_step(strict, x, y); },
                                  {.fullgraph = true, .warmup_calls = 0});
  auto [x, y] = graph_test::batch(0);
  CHECK_THROWS_WITH_AS(fullgraph(x, y), doctest::Contains("Adam.set_lr(0, 0.0005) changes host state"),
                       graph::GraphBreak);

  SeedMlp eager(3), lenient(3);
  auto fallback = ember::compile([&](const Tensor& x, const Tensor& y) { return decaying_step(lenient, x, y); });
  for (int step = 0; step < 4; ++step) {
    auto [xs, ys] = graph_test::batch(step);
    CHECK(graph_test::bit_equal(fallback(xs, ys), decaying_step(eager, xs, ys)));
  }
  CHECK_FALSE(fallback.state().fell_back_to_eager());
  CHECK(fallback.state().segmented_calls() == 2);  // call 0 warmed up, call 1 was the capture that broke
  CHECK(lenient.optimizer->get_lr(0) == eager.optimizer->get_lr(0));
  check_same_state(eager, lenient);
}

// A bf16 tensor times or over a 0-d float32 tensor is computed with the scalar unrounded and
// rounded once, as PyTorch does; the compiled graph, which also fuses the ops around it, must
// give the eager bits. Expected values: numpy float32 arithmetic on the bf16 inputs, rounded to
// bf16 (nearest even) after each op; rounding 1.004 to bf16 first would give 101 and 332.
TEST_CASE("compile: bf16 mul and div by 0-d float32 tensors equal eager bit for bit") {
  const auto step = [](const Tensor& x, const Tensor& factor, const Tensor& divisor) {
    const Tensor scaled = mul(relu(x), factor);
    return std::vector<Tensor>{scaled, div(scaled, divisor), add(div(x, divisor), 1.0)};
  };
  auto compiled = ember::compile([&](const Tensor& x, const Tensor& factor, const Tensor& divisor) {
    return step(x, factor, divisor);
  }, {.fullgraph = true, .warmup_calls = 0});
  const Tensor x = from_vector<float>({100.f, 3.f, 7.f}, {3}).to(kBFloat16);
  const Tensor factor = scalar_tensor(1.004, {.dtype = kFloat32});
  const Tensor divisor = scalar_tensor(0.3, {.dtype = kFloat32});
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    const std::vector<Tensor> expected = step(x, factor, divisor);
    const std::vector<Tensor> actual = compiled(x, factor, divisor);
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {  // bf16 -> float32 is exact: the bits compare
      REQUIRE(actual[i].dtype() == kBFloat16);
      CHECK(graph_test::bit_equal(expected[i].to(kFloat32), actual[i].to(kFloat32)));
    }
    CHECK(actual[0].to(kFloat32).to_vector<float>() == std::vector<float>{100.5f, 3.015625f, 7.03125f});
    CHECK(actual[1].to(kFloat32).to_vector<float>() == std::vector<float>{336.f, 10.0625f, 23.5f});
    CHECK(actual[2].to(kFloat32).to_vector<float>() == std::vector<float>{336.f, 11.f, 24.375f});
  }
  CHECK(compiled.state().captures() == 1);
}

// In-place add_ and mul_ of a float16 intermediate with float32 operands compute in float32 and
// round once into float16, as in PyTorch; in-place nodes are never fused, so the compiled graph
// runs the eager kernel between the fused groups around it and must give the eager bits. Expected
// values: numpy, np.float16(np.float32(h) op r) per step; rounding r to float16 first gives
// -inf for -70000 and 0.5 for 0.5 + 2^-12 + 2^-24.
TEST_CASE("compile: float16 add_ and mul_ with float32 operands equal eager, rounded once") {
  const auto step = [](const Tensor& x, const Tensor& residual, const Tensor& factor) {
    Tensor h = mul(relu(x), 2.0);
    h.add_(residual);
    h.mul_(factor);
    return std::vector<Tensor>{h, add(relu(h), 1.0)};
  };
  auto compiled = ember::compile([&](const Tensor& x, const Tensor& residual, const Tensor& factor) {
    return step(x, residual, factor);
  }, {.fullgraph = true, .warmup_calls = 0});
  const Tensor x = from_vector<float>({30000.f, 0.25f, 3.f}, {3}).to(kFloat16);
  const Tensor residual = from_vector<float>({-70000.f, 0x1p-12f + 0x1p-24f, 1e-3f}, {3});
  const Tensor factor = from_vector<float>({2e-5f, 3.f, 1e4f}, {3});
  for (int call = 0; call < 3; ++call) {
    INFO("call ", call);
    const std::vector<Tensor> expected = step(x, residual, factor);
    const std::vector<Tensor> actual = compiled(x, residual, factor);
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {  // float16 -> float32 is exact: the bits compare
      REQUIRE(actual[i].dtype() == kFloat16);
      CHECK(graph_test::bit_equal(expected[i].to(kFloat32), actual[i].to(kFloat32)));
    }
    CHECK(actual[0].to(kFloat32).to_vector<float>() == std::vector<float>{-0.199951171875f, 1.501953125f, 60000.f});
    CHECK(actual[1].to(kFloat32).to_vector<float>() == std::vector<float>{1.f, 2.501953125f, 60000.f});
  }
  CHECK(compiled.state().captures() == 1);
}

}  // namespace test_compile
