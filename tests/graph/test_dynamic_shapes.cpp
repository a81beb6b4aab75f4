// Dynamic shapes in ember::compile (graph/dynamic_shapes.h): auto mode makes a dim dynamic once
// its size changes, dynamic=true and mark_dynamic do so from the first capture, dynamic=false
// keeps every size a variant of its own. With a dynamic dim, the generated kernels read its size
// at run time, so a new size is captured again without running the compiler, and every size's
// results equal eager execution.
#include <doctest/doctest.h>

#include "fusion_test_util.h"
#include "graph/codegen_cpp.h"
#include "graph/compile.h"
#include "graph/fusion.h"
#include "graph_test_util.h"
#include "scoped_cache_dir.h"

namespace test_dynamic_shapes {

using namespace ember;

namespace {

// The CPU source of every fused group of `graph`: equal sources share one compiled library.
std::string fused_source(const graph::Graph& graph) {
  std::vector<const graph::FusedGroup*> groups;
  for (const graph::FusedOpDef* op : graph::fused_ops(graph)) groups.push_back(&op->group);
  REQUIRE(!groups.empty());
  return graph::emit_module_source(groups, graph::Target::Cpu);
}

}  // namespace

TEST_CASE("dynamic shapes: auto makes a changed batch dim dynamic, later sizes reuse the kernels and match eager") {
  graph_test::ScopedCacheDir cache;  // cold: every compiler run shows in compiler_runs()
  graph_test::SeedMlp eager(7), compiled(7);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true});
  const std::vector<int64_t> batch_sizes = {32, 32, 32, 16, 16, 8, 24, 8, 32, 5};
  int runs_before_new_size = 0;
  std::string dynamic_source;
  for (size_t call = 0; call < batch_sizes.size(); ++call) {
    const int64_t size = batch_sizes[call];
    CAPTURE(call);
    CAPTURE(size);
    auto [x, y] = graph_test::batch(static_cast<int>(call), size);
    if (call == 5) runs_before_new_size = graph::compiler_runs();
    CHECK(graph_test::bit_equal(eager.step(x, y), train_step(x, y)));
    if (call == 3) dynamic_source = fused_source(*train_step.state().graph());
    if (call == 5 || call == 6 || call == 9) CHECK(fused_source(*train_step.state().graph()) == dynamic_source);
  }
  // Sizes 8, 24 and 5 found the size-16 capture's kernels compiled: the source names no size.
  CHECK(graph::compiler_runs() == runs_before_new_size);
  CHECK(dynamic_source.find("sizes[0]") != std::string::npos);
  const graph::CompiledFunction& state = train_step.state();
  REQUIRE(state.recompile_reasons().size() == 1);
  CHECK(state.recompile_reasons()[0] ==
        "input 0 dim 0 (32 -> 16), input 1 dim 0 (32 -> 16) changed size: dynamic from now on");
  CHECK(state.dynamic_dims() == std::vector<uint32_t>{1u, 1u});
  CHECK(state.specializations() == 3);  // 8, 24, 5; 32 and 16 are the two variants
  CHECK(state.captures() == 5);
  CHECK(state.replays() == 4);  // 32 twice, 16 once, 8 once
  CHECK_FALSE(state.fell_back_to_eager());
  const std::vector<Tensor> expected = eager.model->parameters(), actual = compiled.model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(graph_test::bit_equal(expected[i], actual[i]));
    CHECK(graph_test::bit_equal(eager.optimizer->state(expected[i])->exp_avg_sq,
                                compiled.optimizer->state(actual[i])->exp_avg_sq));
  }
}

TEST_CASE("dynamic shapes: dynamic=false makes every size a variant, counted against cache_limit") {
  Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f}, {3});
  auto scaled = ember::compile([&](const Tensor& x) { return (x * weight + 1.0).sum(Dims{1}); },
                               {.cache_limit = 3, .warmup_calls = 0, .dynamic = false});
  for (int64_t rows : {2, 3, 4, 5, 6}) {
    const Tensor x = graph_test::seeded_randn({rows, 3}, static_cast<uint64_t>(rows));
    CHECK(graph_test::bit_equal(scaled(x), (x * weight + 1.0).sum(Dims{1})));
  }
  CHECK(scaled.state().dynamic_dims().empty());
  CHECK(scaled.state().specializations() == 0);
  CHECK(scaled.state().captures() == 3);
  CHECK(scaled.state().fell_back_to_eager());
}

TEST_CASE("dynamic shapes: mark_dynamic and dynamic=true make the first capture's kernels read the size") {
  graph_test::ScopedCacheDir cache;
  Tensor weight = graph_test::seeded_randn({6}, 1);
  // Three fused groups: a broadcast chain summed over the fixed dim (as many sums as rows:
  // allocated per call), one averaged over the dynamic dim (divided by a run-time count), and a
  // pointwise one (threads or not: decided at run time).
  auto reference = [&](const Tensor& x) {
    return std::vector<Tensor>{tanh(x * weight + 0.5).sum(Dims{1}), (x * x).mean(Dims{0}), relu(x - weight) * 3.0};
  };
  for (const bool mark : {true, false}) {
    CAPTURE(mark);
    CompileOptions options{.warmup_calls = 0};
    if (!mark) options.dynamic = true;
    auto fn = ember::compile(reference, options);
    Tensor first = graph_test::seeded_randn({9, 6}, 2);
    if (mark) mark_dynamic(first, -2);
    const std::vector<Tensor> got = fn(first);
    const std::string source = fused_source(*fn.state().graph());
    CHECK(source.find("static_cast<double>(sizes[0])") != std::string::npos);
    CHECK(source.find("new double[(sizes[0])]") != std::string::npos);
    CHECK(source.find("if (numel >= ") != std::string::npos);
    const int runs = graph::compiler_runs();
    // 40000 rows: above kParallelGrain elements, where the pointwise loop takes the threads.
    for (int64_t rows : {9, 3, 1, 40000}) {
      CAPTURE(rows);
      const Tensor x = rows == 9 ? first : graph_test::seeded_randn({rows, 6}, static_cast<uint64_t>(rows));
      const std::vector<Tensor> actual = fn(x), expected = reference(x);
      for (size_t i = 0; i < expected.size(); ++i) {
        const double error = graph_test::max_relative_error(actual[i], expected[i]);
        CHECK(std::isfinite(error));
        CHECK(error <= 1e-6);  // the fused sums accumulate in double, eager's in another order
      }
      CHECK(fused_source(*fn.state().graph()) == source);
    }
    CHECK(graph::compiler_runs() == runs);
    CHECK(fn.state().dynamic_dims().at(0) == (mark ? 1u : 3u));
    CHECK(fn.state().recompile_reasons().empty());
    CHECK(fn.state().specializations() == 3);
  }
}

TEST_CASE("dynamic shapes: a size derived from a dynamic one (a flattened [s * 6]) is found by comparing captures") {
  graph_test::ScopedCacheDir cache;
  Tensor weight = graph_test::seeded_randn({6}, 1);
  // The group runs over the flattened [s * 6] view: no dim of it equals s itself.
  auto reference = [&](const Tensor& x) { return tanh((x * weight).reshape({-1}) + 0.5) * 2.0; };
  auto fn = ember::compile(reference, {.warmup_calls = 0});
  std::string dynamic_source;
  int runs = 0;
  for (int64_t rows : {4, 8, 12, 3, 8}) {
    CAPTURE(rows);
    if (rows == 12) runs = graph::compiler_runs();
    const Tensor x = graph_test::seeded_randn({rows, 6}, static_cast<uint64_t>(rows));
    CHECK(graph_test::bit_equal(fn(x), reference(x)));
    const std::string source = fused_source(*fn.state().graph());
    if (rows == 8 && dynamic_source.empty()) dynamic_source = source;
    if (rows == 12 || rows == 3) CHECK(source == dynamic_source);
  }
  CHECK(graph::compiler_runs() == runs);  // 12 and 3 reused the kernels compiled at 8
  CHECK(dynamic_source.find("// fused_0: add_scalar+tanh+mul_scalar, [?] float32 -> [?]") != std::string::npos);
  CHECK(fn.state().specializations() == 2);
}

TEST_CASE("dynamic shapes: only the newest kMaxSizeSpecializations sizes are kept") {
  auto doubled = ember::compile([](const Tensor& x) { return x * 2.0 + 1.0; }, {.warmup_calls = 0, .dynamic = true});
  const int sizes = kMaxSizeSpecializations + 4;
  for (int64_t n = 1; n <= sizes; ++n) {
    const Tensor x = graph_test::seeded_randn({n}, static_cast<uint64_t>(n));
    CHECK(graph_test::bit_equal(doubled(x), x * 2.0 + 1.0));
  }
  CHECK(doubled.state().captures() == 1 + kMaxSizeSpecializations);
  CHECK(doubled.state().specializations() == sizes - 1);
  CHECK(doubled.state().recompile_reasons().empty());
  // Size 2 was dropped, so it is captured again; size 1 (the variant) and the newest replay.
  const Tensor two = graph_test::seeded_randn({2}, 2);
  CHECK(graph_test::bit_equal(doubled(two), two * 2.0 + 1.0));
  CHECK(doubled.state().specializations() == sizes);
  const int replays = doubled.state().replays();
  (void)doubled(graph_test::seeded_randn({1}, 1));
  (void)doubled(two);
  CHECK(doubled.state().replays() == replays + 2);
}

TEST_CASE("dynamic shapes: captures for new sizes hold at most size_specialization_bytes of arenas") {
  // softmax is no pointwise op: its n floats are an intermediate in the arena, 4n bytes (n a
  // multiple of 64: no padding). A budget of 4,000 bytes holds sizes 256, 384 and 192 together
  // (3,328 bytes), and only the newest when it alone is larger (2048: 8,192 bytes).
  auto scaled = ember::compile([](const Tensor& x) { return softmax(x, 0) * 3.0; },
                               {.warmup_calls = 0, .dynamic = true, .size_specialization_bytes = 4000});
  auto arena = [&] { return scaled.state().executor()->memory_plan()->arena_bytes; };
  for (int64_t n : {128, 256, 384, 192, 2048}) {
    CAPTURE(n);
    const Tensor x = graph_test::seeded_randn({n}, static_cast<uint64_t>(n));
    CHECK(graph_test::bit_equal(scaled(x), softmax(x, 0) * 3.0));
    REQUIRE(scaled.state().executor()->memory_plan() != nullptr);
    CHECK(arena() == 4 * n);
    const int held[] = {1, 2, 3, 4, 2};  // the variant (128) and the captures for new sizes
    CHECK(scaled.state().captures() == held[n == 128 ? 0 : n == 256 ? 1 : n == 384 ? 2 : n == 192 ? 3 : 4]);
  }
  const int before = scaled.state().captures_made();
  (void)scaled(graph_test::seeded_randn({128}, 128));
  CHECK(scaled.state().captures_made() == before);  // the variant is never dropped
  (void)scaled(graph_test::seeded_randn({192}, 192));
  CHECK(scaled.state().captures_made() == before + 1);
}

TEST_CASE("dynamic shapes: a dtype or rank change is still a recompile, and mark_dynamic checks its dim") {
  auto fn = ember::compile([](const Tensor& x) { return x * 3.0; }, {.warmup_calls = 0, .dynamic = true});
  (void)fn(graph_test::seeded_randn({4, 2}, 1));
  (void)fn(graph_test::seeded_randn({4}, 2));
  REQUIRE(fn.state().recompile_reasons().size() == 1);
  CHECK(fn.state().recompile_reasons()[0] == "input 0 is [4] float32 on cpu, the graph was captured for [4, 2] float32 on cpu");
  CHECK(fn.state().specializations() == 0);
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(mark_dynamic(x, 2),
                       doctest::Contains("mark_dynamic: dim 2 is out of range for a tensor of shape [2, 3] (rank 2)"),
                       Error);
  CHECK_THROWS_WITH_AS(mark_dynamic(x, -3), doctest::Contains("test_dynamic_shapes.cpp"), Error);
  CHECK_THROWS_WITH_AS(mark_dynamic(Tensor(), 0), doctest::Contains("mark_dynamic: the tensor is undefined"), Error);
}

TEST_CASE("dynamic shapes: a compiled forward's backward at new batch sizes equals eager") {
  graph_test::SeedMlp eager(9), compiled(9);
  auto loss_of = ember::compile(
      [&](const Tensor& x, const Tensor& y) { return nn::functional::cross_entropy(compiled.model->forward(x), y); },
      {.fullgraph = true});
  for (int64_t size : {32, 32, 32, 12, 12, 20, 7, 32}) {
    CAPTURE(size);
    auto [x, y] = graph_test::batch(static_cast<int>(size), size);
    compiled.optimizer->zero_grad();
    Tensor loss = loss_of(x, y);
    loss.backward();
    compiled.optimizer->step();
    CHECK(graph_test::bit_equal(eager.step(x, y), loss));
    const std::vector<Tensor> expected = eager.model->parameters(), actual = compiled.model->parameters();
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(graph_test::bit_equal(expected[i].grad(), actual[i].grad()));
      CHECK(graph_test::bit_equal(expected[i], actual[i]));
    }
  }
  CHECK(loss_of.state().specializations() == 2);  // 20 and 7; 12 made the batch dim dynamic
  REQUIRE(loss_of.state().backward_executor() != nullptr);
}

TEST_CASE("cuda dynamic shapes: the seed step at changing batch sizes, default and reduce_overhead, equals eager") {
  if (!testing::cuda_or_skip()) return;
  const Device cuda = Device::parse("cuda");
  for (const char* mode : {"default", "reduce_overhead"}) {
    CAPTURE(mode);
    auto make = [&] {
      manual_seed(11);
      auto mlp = std::make_unique<graph_test::SeedMlp>(11);
      mlp->model->to(cuda);
      mlp->optimizer = std::make_unique<optim::Adam>(mlp->model->parameters(), optim::AdamOptions{.lr = 1e-3});
      return mlp;
    };
    auto eager = make(), compiled = make();
    auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled->step(x, y); },
                                     {.fullgraph = true, .mode = mode});
    std::string cuda_source;
    for (int64_t size : {32, 32, 16, 8, 24, 8}) {
      CAPTURE(size);
      auto [x, y] = graph_test::batch(static_cast<int>(size), size);
      x = x.to(cuda);
      y = y.to(cuda);
      const Tensor expected = eager->step(x, y);
      // The fused bias-gradient sums add in another order than eager's reduction.
      CHECK(graph_test::max_relative_error(train_step(x, y).to(kCPU), expected.to(kCPU)) <= 1e-5);
      const graph::Graph* captured = train_step.state().graph();
      if (captured == nullptr) continue;  // the warm-up call ran eagerly: nothing captured yet
      std::vector<const graph::FusedGroup*> groups;
      for (const graph::FusedOpDef* op : graph::fused_ops(*captured)) groups.push_back(&op->group);
      const std::string source = graph::emit_module_source(groups, graph::Target::Cuda);
      if (size == 16) cuda_source = source;
      if (size == 8 || size == 24) CHECK(source == cuda_source);  // one NVRTC program for every size
    }
    CHECK(train_step.state().specializations() == 2);
    const std::vector<Tensor> expected = eager->model->parameters(), actual = compiled->model->parameters();
    for (size_t i = 0; i < expected.size(); ++i)
      CHECK(graph_test::max_relative_error(actual[i].to(kCPU), expected[i].to(kCPU)) <= 1e-5);
  }
}

}  // namespace test_dynamic_shapes
