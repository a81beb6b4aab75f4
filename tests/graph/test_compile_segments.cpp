// Compiled segments (graph/segments.h): a compiled function with a graph break runs fn's host code
// each call and its kernels as compiled segments split where it reads values on the host. Each
// case compares with the same function run eagerly, bit for bit: the segments run the same
// kernels (or fused kernels that compute the same expressions in the same order). Most cases
// compile every segment (CompileOptions::compile_every_segment): on the CPU their small segments
// would not pay for their deferral and run eagerly by default, which
// test_compile_segment_placement.cpp checks.
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

namespace test_compile_segments {

using namespace ember;
using graph_test::bit_equal;
using graph_test::check_same_state;
using graph_test::SeedMlp;
using ember::segment_test::clipping_step;

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

}  // namespace test_compile_segments
