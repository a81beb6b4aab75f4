// Compiled segments (graph/segments.h), where they compile: on the CPU only the segments whose
// fusion saves more than deferring their kernels costs (the rest run eagerly), a compiled
// function called inside an eager place compiles on its own, and a step with a host read matches
// eager on CUDA. The other compiled-segment cases are test_compile_segments.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

#include "graph/compile.h"
#include "graph/segments.h"
#include "../skip_case.h"
#include "fusion_test_util.h"
#include "graph_test_util.h"
#include "segment_test_util.h"
#include "runtime/ember.h"

namespace test_compile_segment_placement {

using namespace ember;
using graph_test::bit_equal;
using graph_test::check_same_state;
using graph_test::SeedMlp;
using ember::segment_test::clipping_step;

TEST_CASE("compile segments: on the CPU a segment that would not pay runs eagerly, one that would compiles") {
  // The seed step's segments save tens of KB of memory traffic for ~25 deferred calls
  // (graph/segment_cost.h): by default both places of the step run eagerly after their first
  // segment, with eager's results bit for bit, and nothing is traced at later calls.
  constexpr double kMaxNorm = 1.0;
  SeedMlp eager(5), compiled(5);
  int eager_clips = 0, compiled_clips = 0;
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& y) { return clipping_step(compiled, x, y, kMaxNorm, &compiled_clips); });
  int kernel_runs_after_warmup = -1;
  for (int step = 0; step < 8; ++step) {
    auto [x, y] = graph_test::batch(step);
    CHECK(bit_equal(train_step(x, y), clipping_step(eager, x, y, kMaxNorm, &eager_clips)));
    if (step == 2) kernel_runs_after_warmup = train_step.state().segments()->kernel_runs();
  }
  CHECK(compiled_clips == eager_clips);
  check_same_state(eager, compiled);
  const graph::SegmentCache& segments = *train_step.state().segments();
  CHECK(segments.segments() == 0);
  REQUIRE(segments.eager_places().size() == 2);  // before the norm's item() and after it
  CHECK(segments.kernel_runs() == kernel_runs_after_warmup);  // calls 3 to 7 deferred nothing
  const std::string summary = train_step.state().explain();
  CHECK(summary.find("runs eagerly after 0 host reads: ") != std::string::npos);
  CHECK(summary.find("on the CPU compiling it saves ~") != std::string::npos);

  // A chain of pointwise ops over 4 MB tensors before the read: fused, it writes one of its six
  // values instead of all of them, which pays; the single multiply after the read runs eagerly.
  // (Its values lie in [0, 2], so the sum is well conditioned whatever order adds it.)
  auto chain = [](const Tensor& x) {
    Tensor y = ((x * 1.5 + 2.0).relu() * x - 1.0).tanh() + 1.0;
    const double total = y.sum().item();
    return y * total;
  };
  auto compiled_chain = ember::compile(chain, {.warmup_calls = 0});
  for (int call = 0; call < 3; ++call) {
    manual_seed(70 + static_cast<uint64_t>(call));
    const Tensor x = randn({1024, 1024});
    const double error = graph_test::max_relative_error(compiled_chain(x), chain(x));
    CHECK(std::isfinite(error));
    CHECK(error <= 1e-5);
  }
  const graph::SegmentCache& chain_segments = *compiled_chain.state().segments();
  CHECK(chain_segments.segments() == 1);
  CHECK(chain_segments.compiled_runs() == 2);
  CHECK(chain_segments.eager_places().size() == 1);

  // Weighing a segment traces it into a graph and runs the passes, so it counts against the
  // segment limit (8 with cache_limit 1): of the 12 places before a read, 8 are weighed, the rest
  // run eagerly unweighed (the 13th, y + total alone, is one kernel).
  auto reads = [](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < 12; ++i) {
      for (int k = 0; k <= i; ++k) y = y * 0.5;  // a new segment at each place
      const double total = (y * y).sum().item();
      y = y + total;
    }
    return y;
  };
  auto compiled_reads = ember::compile(reads, {.cache_limit = 1, .warmup_calls = 0});
  const Tensor x = from_vector<float>({0.5f, -1.0f, 2.0f}, {3});
  for (int call = 0; call < 3; ++call) CHECK(bit_equal(compiled_reads(x), reads(x)));
  const std::vector<std::string>& places = compiled_reads.state().segments()->eager_places();
  CHECK(places.size() == 13);
  const auto past_limit = std::ranges::count_if(
      places, [](const std::string& place) { return place.find("(the limit)") != std::string::npos; });
  CHECK(past_limit == 12 - kSegmentsPerVariant);
}

TEST_CASE("compile segments: a compiled function called where the outer one runs eagerly compiles on its own") {
  // Where a place in the outer function runs eagerly, nothing records (DispatchMode::records), so
  // the inner compiled function captures and replays its own graph there; where the outer one
  // defers, or captures, the inner one runs inline into it.
  auto inner_body = [](const Tensor& x) { return (x * 2.0 + 1.0).relu() * x; };
  auto inner = ember::compile(inner_body, {.warmup_calls = 0});
  auto body = [](auto&& f, const Tensor& x) {
    const Tensor y = f(x) * 3.0;
    const double total = y.sum().item();
    return f(y) + total;
  };
  auto outer = ember::compile([&](const Tensor& x) { return body(inner, x); }, {.warmup_calls = 0});
  for (int call = 0; call < 5; ++call) {
    manual_seed(90 + static_cast<uint64_t>(call));
    const Tensor x = randn({4, 5});
    const double error = graph_test::max_relative_error(outer(x), body(inner_body, x));
    CHECK(std::isfinite(error));
    CHECK(error <= 1e-6);
  }
  REQUIRE(outer.state().segments() != nullptr);
  CHECK(outer.state().segments()->eager_places().size() == 2);
  CHECK(inner.state().captures() == 1);
  CHECK(inner.state().replays() >= 4);  // twice per outer call from the third on
}

TEST_CASE("cuda compile segments: a step that branches on its gradient norm matches eager on cuda") {
  if (!ember::testing::cuda_or_skip()) return;
  const Device cuda = Device::parse("cuda");
  struct CudaMlp {
    nn::Sequential model;
    std::unique_ptr<optim::Adam> optimizer;
    explicit CudaMlp(uint64_t seed) {
      manual_seed(seed);
      model = nn::Sequential(nn::Linear(100, 256), nn::ReLU(), nn::Linear(256, 10));
      model->to(Device::parse("cuda"));
      optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 1e-3});
    }
    Tensor step(const Tensor& x, const Tensor& y, int* clipped) {
      optimizer->zero_grad();
      Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      std::vector<Tensor> grads;
      for (const Tensor& parameter : model->parameters()) grads.push_back(parameter.grad());
      const double norm = nn::utils::get_total_norm(grads).item();
      if (norm > 1.0) {
        ++*clipped;
        NoGradGuard no_grad;
        for (Tensor& grad : grads) grad.mul_(1.0 / norm);
      }
      optimizer->step();
      return loss;
    }
  };
  CudaMlp eager(11), compiled(11);
  int eager_clips = 0, compiled_clips = 0;
  auto train_step =
      ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y, &compiled_clips); });
  for (int step = 0; step < 12; ++step) {
    auto [x, y] = graph_test::batch(step);
    const Tensor expected = eager.step(x.to(cuda), y.to(cuda), &eager_clips);
    const Tensor actual = train_step(x.to(cuda), y.to(cuda));
    INFO("step ", step);
    // The fused relu_backward+sum adds the bias gradient in another order than eager's reduction.
    CHECK(graph_test::max_relative_error(actual.to(kCPU), expected.to(kCPU)) <= 1e-5);
  }
  CHECK(compiled_clips == eager_clips);
  const std::vector<Tensor> expected = eager.model->parameters(), actual = compiled.model->parameters();
  for (size_t i = 0; i < expected.size(); ++i)
    CHECK(graph_test::max_relative_error(actual[i].to(kCPU), expected[i].to(kCPU)) <= 1e-5);
  REQUIRE(train_step.state().segments() != nullptr);
  CHECK(train_step.state().segments()->compiled_runs() >= 2 * 10);
  CHECK(train_step.state().segments()->kernel_runs() == 0);
}

}  // namespace test_compile_segment_placement
