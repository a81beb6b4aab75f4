// Compiled segments (graph/segments.h): a compiled function with a graph break runs fn's host code
// each call and its kernels as compiled segments split where it reads values on the host. Each
// case compares with the same function run eagerly, bit for bit: the segments run the same
// kernels (or fused kernels that compute the same expressions in the same order). Most cases
// compile every segment (CompileOptions::compile_every_segment): on the CPU their small segments
// would not pay for their deferral and run eagerly by default, which the last CPU case checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

#include "graph/compile.h"
#include "graph/segments.h"
#include "../skip_case.h"
#include "fusion_test_util.h"
#include "graph_test_util.h"
#include "runtime/ember.h"

using namespace ember;
using graph_test::bit_equal;
using graph_test::check_same_state;
using graph_test::SeedMlp;

namespace {

// A step that reads the gradient norm on the host and clips by it only when it is large: the
// branch taken depends on the data, so the second segment has two variants.
Tensor clipping_step(SeedMlp& mlp, const Tensor& x, const Tensor& y, double max_norm, int* clipped) {
  mlp.optimizer->zero_grad();
  Tensor loss = nn::functional::cross_entropy(mlp.model->forward(x), y);
  loss.backward();
  std::vector<Tensor> grads;
  for (const Tensor& parameter : mlp.model->parameters()) grads.push_back(parameter.grad());
  const double norm = nn::utils::get_total_norm(grads).item();
  if (norm > max_norm) {
    ++*clipped;
    NoGradGuard no_grad;
    for (Tensor& grad : grads) grad.mul_(max_norm / norm);
  }
  mlp.optimizer->step();
  return loss;
}

}  // namespace

TEST_CASE("compile segments: a training step that branches on its gradient norm matches eager bit for bit") {
  // The threshold: the median gradient norm of a run that never clips, so both branches are taken.
  SeedMlp probe(11);
  std::vector<double> norms;
  for (int step = 0; step < 24; ++step) {
    auto [x, y] = graph_test::batch(step);
    int unused = 0;
    clipping_step(probe, x, y, 1e9, &unused);
    std::vector<Tensor> grads;
    for (const Tensor& parameter : probe.model->parameters()) grads.push_back(parameter.grad());
    norms.push_back(nn::utils::get_total_norm(grads).item());
  }
  std::ranges::sort(norms);
  const double kMaxNorm = norms[12];
  SeedMlp eager(11), compiled(11);
  int eager_clips = 0, compiled_clips = 0;
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& y) { return clipping_step(compiled, x, y, kMaxNorm, &compiled_clips); },
      {.compile_every_segment = true});
  int segments_after_warmup = 0;
  for (int step = 0; step < 24; ++step) {
    auto [x, y] = graph_test::batch(step);
    const Tensor expected = clipping_step(eager, x, y, kMaxNorm, &eager_clips);
    CHECK(bit_equal(train_step(x, y), expected));
    if (step == 11) segments_after_warmup = train_step.state().segments()->segments();
  }
  check_same_state(eager, compiled);
  CHECK(compiled_clips == eager_clips);
  MESSAGE("steps clipped: " << eager_clips << " of 24");
  CHECK(eager_clips > 2);  // both branches ran several times
  CHECK(eager_clips < 22);
  const graph::CompiledFunction& state = train_step.state();
  CHECK(state.graph_breaks().size() == 1);
  CHECK_FALSE(state.fell_back_to_eager());
  CHECK(state.segmented_calls() == 22);  // call 0 warmed up, call 1 was the capture that broke
  const graph::SegmentCache& segments = *state.segments();
  MESSAGE(state.explain());
  // Forward + backward + norm; the optimizer step alone; the clipping and the step, first with
  // the clipping factor baked in, then (it changed) read at each run: four segments, all compiled
  // in the first calls and replayed since.
  CHECK(segments.segments() == 4);
  CHECK(segments_after_warmup == 4);
  CHECK(segments.compiled_runs() == 2 * 22);
  CHECK(segments.kernel_runs() == 0);
}

TEST_CASE("compile segments: a backward after the break reads the activations saved before it") {
  // The loss is read before backward: the forward's activations, saved by autograd, outlive the
  // first segment and are filled from it; the backward and step form the second.
  const auto step = [](SeedMlp& mlp, const Tensor& x, const Tensor& y) {
    mlp.optimizer->zero_grad();
    Tensor loss = nn::functional::cross_entropy(mlp.model->forward(x), y);
    mul(loss, 1.0 / loss.item()).backward();  // a scalar read on the host, new each call
    mlp.optimizer->step();
    return loss;
  };
  SeedMlp eager(4), compiled(4);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return step(compiled, x, y); },
                                   {.compile_every_segment = true});
  for (int call = 0; call < 12; ++call) {
    auto [x, y] = graph_test::batch(call);
    CHECK(bit_equal(train_step(x, y), step(eager, x, y)));
  }
  check_same_state(eager, compiled);
  // The forward; the backward and step, first with the loss's reciprocal baked in, then (it
  // changed) read at each run.
  CHECK(train_step.state().segments()->segments() == 3);
  CHECK(train_step.state().segments()->kernel_runs() == 0);
}

TEST_CASE("compile segments: host reads that copy first (to_vector of a transposed result, str) read the values") {
  // to_vector makes a transposed result dense before reading it, and str() reads strided memory:
  // after the break those copies must run at once, not be deferred into the next segment (the host
  // would read memory no kernel has filled; EMBER_POISON_OUTPUTS makes that NaN).
  const auto body = [](const Tensor& x, std::vector<float>* read, std::string* printed) {
    const Tensor scaled = exp(x * 0.5).transpose(0, 1);
    *read = scaled.to_vector<float>();
    *printed = (scaled + 1.0).str();
    return mul(scaled, static_cast<double>((*read)[1]));
  };
  std::vector<float> compiled_read, eager_read;
  std::string compiled_printed, eager_printed;
  auto f = ember::compile([&](const Tensor& x) { return body(x, &compiled_read, &compiled_printed); },
                          {.compile_every_segment = true});
  for (int call = 0; call < 5; ++call) {
    manual_seed(40 + static_cast<uint64_t>(call));
    const Tensor x = randn({3, 4});
    CHECK(bit_equal(f(x), body(x, &eager_read, &eager_printed)));
    CHECK(compiled_read == eager_read);
    CHECK(compiled_printed == eager_printed);
  }
  REQUIRE(f.state().segments() != nullptr);
  CHECK(f.state().segments()->compiled_runs() >= 3);
}

TEST_CASE("compile segments: kept tensors, views and in-place updates of inputs and views are eager's") {
  const auto body = [](const Tensor& x, Tensor buffer) {
    Tensor hidden = relu(x * 2.0 - 1.0);
    Tensor row = hidden.select(0, 1);        // a view of a deferred result
    buffer.add_(hidden.sum(Dims{0}));        // an input updated in place
    Tensor head = buffer.narrow(0, 0, 2);    // a view of the updated input
    const double total = hidden.sum().item();
    row.mul_(1.0 / total);                   // written through the view, after the break
    Tensor out = hidden * 3.0 + row.sum();   // reads the write through its base
    head.add_(ones_like(head), 0.5);
    return std::vector<Tensor>{hidden, row, out, head, exp(buffer)};
  };
  auto compiled = ember::compile(body, {.compile_every_segment = true, .warmup_calls = 0});
  for (int call = 0; call < 4; ++call) {
    manual_seed(50 + static_cast<uint64_t>(call));
    const Tensor x = randn({4, 3});
    const Tensor eager_buffer = randn({3});
    const Tensor compiled_buffer = eager_buffer.clone();
    const std::vector<Tensor> expected = body(x, eager_buffer);
    const std::vector<Tensor> actual = compiled(x, compiled_buffer);
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) CHECK(bit_equal(actual[i], expected[i]));
    CHECK(bit_equal(compiled_buffer, eager_buffer));
    // The returned view still views what it viewed: writing through it reaches its base.
    Tensor view = actual[1];
    view.fill_(7.0);
    CHECK(actual[0].select(0, 1).to_vector<float>() == std::vector<float>(3, 7.0f));
  }
  CHECK(compiled.state().segmented_calls() == 3);
  CHECK(compiled.state().segments()->compiled_runs() == 6);
}

TEST_CASE("compile segments: dropout draws a new mask each call, the same as eager's") {
  const auto body = [](nn::Sequential& model, const Tensor& x) {
    Tensor hidden = model->forward(x);
    const double mean = hidden.mean().item();
    return dropout(hidden - mean, 0.3, /*train=*/true).sum(Dims{1});
  };
  manual_seed(3);
  nn::Sequential model(nn::Linear(8, 16), nn::ReLU(), nn::Dropout(0.5));
  auto compiled = ember::compile([&](const Tensor& x) { return body(model, x); }, {.compile_every_segment = true});
  const Tensor x = randn({5, 8});
  std::vector<float> previous;
  for (int call = 0; call < 6; ++call) {
    const GeneratorState start = default_generator().get_state();
    const Tensor expected = body(model, x);
    default_generator().set_state(start);
    const std::vector<float> actual = compiled(x).to_vector<float>();
    CHECK(actual == expected.to_vector<float>());
    CHECK(actual != previous);
    previous = actual;
  }
  // The generator ranges are read per run; the mean subtracted changes each call, so the second
  // segment is compiled again to read it per run: three segments serve every call.
  CHECK(compiled.state().segments()->segments() == 3);
}

TEST_CASE("compile segments: new segments past the limit run kernel by kernel and stay right") {
  int call = 0;
  auto compiled = ember::compile([&](const Tensor& x) {
    const double total = (x * x).sum().item();
    Tensor result = x + total;
    for (int i = 0; i < call; ++i) result = result * 2.0 - result;  // two more ops each call: a new segment
    return result;
  }, {.compile_every_segment = true, .cache_limit = 1, .warmup_calls = 0});
  const Tensor x = from_vector<float>({1, 2, 3}, {3});
  for (call = 0; call < 14; ++call) {
    const std::vector<float> result = compiled(x).to_vector<float>();
    CHECK(result == std::vector<float>{15.0f, 16.0f, 17.0f});
  }
  const graph::SegmentCache& segments = *compiled.state().segments();
  CHECK(segments.limit() == kSegmentsPerVariant);
  CHECK(segments.segments() == segments.limit());  // (x * x).sum() once, then one per call
  CHECK(segments.kernel_runs() == 6);              // calls 8 to 13
}

TEST_CASE("compile segments: a kernel's error is raised where the segment ends, and nothing is lost") {
  SeedMlp mlp(2);
  auto loss_of = ember::compile([&](const Tensor& x, const Tensor& y) {
    Tensor loss = nn::functional::cross_entropy(mlp.model->forward(x), y);
    const double value = loss.item();
    return loss * value;
  }, {.compile_every_segment = true, .warmup_calls = 0});
  auto [x, y] = graph_test::batch(0);
  loss_of(x, y);
  loss_of(x, y);
  const Tensor bad = randint(12, 13, {32});
  CHECK_THROWS_WITH(loss_of(x, bad), doctest::Contains("target 12 at position 0 is out of range for 10 classes"));
  Tensor expected = nn::functional::cross_entropy(mlp.model->forward(x), y);
  expected = expected * expected.item();
  CHECK(bit_equal(loss_of(x, y), expected));

  // fn throws after in-place updates it did not read: they happened, as they would have eagerly.
  int calls = 0;
  auto throwing = ember::compile([&](Tensor buffer) {
    const double before = buffer.sum().item();
    buffer.add_(ones_like(buffer));
    buffer.mul_(2.0);
    if (++calls >= 2) throw std::runtime_error("host code failed");
    return buffer * before;
  }, {.compile_every_segment = true, .warmup_calls = 0});
  const Tensor buffer = from_vector<float>({1, 2}, {2});
  throwing(buffer);  // the capture, which broke: [4, 6]
  CHECK_THROWS_WITH(throwing(buffer), "host code failed");
  CHECK(buffer.to_vector<float>() == std::vector<float>{10.0f, 14.0f});
}

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
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y, &compiled_clips); });
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
