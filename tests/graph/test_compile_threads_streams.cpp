// Compiled functions across threads and CUDA streams. A call made under another stream than the
// previous call reuses the same arena (and, under reduce_overhead, staged inputs), so its stream
// must wait for the previous one on the device (graph/call_stream_order.h): checked in both modes
// with the earlier call queued behind milliseconds of work on a side stream. Functions compiled
// and called from two threads at once equal eager, on the CPU and, under reduce_overhead, on a GPU,
// where every capture and launch shares the device's one capture stream; so does one function
// called from two threads, forward and compiled backward.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <exception>
#include <functional>
#include <stdexcept>
#include <vector>
#include <string>
#include <thread>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph/cuda_graph_replay.h"
#include "runtime/ember.h"
#include "skip_case.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#endif

namespace test_compile_threads_streams {

using namespace ember;

#ifdef EMBER_HAS_CUDA
TEST_CASE("cuda compile: a call under another stream waits for the previous call, in both modes") {
  if (!ember::testing::cuda_or_skip()) return;
  const Device cuda{DeviceType::CUDA, 0};
  manual_seed(43);
  const Tensor weight = randn({256, 256}, {.device = cuda});
  const auto forward = [&](const Tensor& x) { return relu(matmul(x, weight)) * 2.0 + 1.0; };
  std::string why_no_graphs;
  const bool graphs = graph::CudaGraphReplay::available(&why_no_graphs);
  for (const char* mode : {"default", "reduce_overhead"}) {
    CAPTURE(mode);
    if (!graphs && std::string(mode) == "reduce_overhead") {
      MESSAGE("reduce_overhead not checked: " << why_no_graphs);
      continue;
    }
    auto compiled = ember::compile(forward, {.fullgraph = true, .mode = mode});
    const Tensor x = randn({64, 256}, {.device = cuda});
    for (int call = 0; call < 3; ++call) (void)compiled(x);  // compiled, warmed up (and captured)
    synchronize(cuda);

    const cuda::Stream side = cuda::Stream::from_pool(cuda);
    Tensor on_side;
    {
      const cuda::StreamGuard guard(side);
      // Milliseconds of work ahead of the call on the side stream (even with TF32 GEMMs).
      Tensor busy = randn({2048, 2048}, {.device = cuda});
      for (int i = 0; i < 100; ++i) busy = mul(matmul(busy, busy), 1e-3);
      on_side = compiled(x);
    }
    const Tensor shifted = x + 1.0;
    const Tensor on_default = compiled(shifted);
    cuda::Event done;
    done.record(cuda::current_stream(cuda));
    // Unordered, the default stream's few microseconds of work would be long finished by now;
    // ordered, they wait behind the side stream's queue.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK_FALSE(done.query());
    synchronize(cuda);
    CHECK(graph_test::max_relative_error(on_side.to(kCPU), forward(x).to(kCPU)) <= 1e-5);
    CHECK(graph_test::max_relative_error(on_default.to(kCPU), forward(shifted).to(kCPU)) <= 1e-5);
  }
}
#endif

namespace {

// What a wrong compiled result looks like, so one failed GPU run can tell the likely causes apart:
// unwritten memory (NaN under EMBER_POISON_OUTPUTS), the previous call's values (a stale read) or
// other values (another thread's data, a wrong kernel).
std::string describe_mismatch(int round, int call, const Tensor& got, const Tensor& expected, const Tensor& previous,
                              double error) {
  const std::vector<float> a = got.to_vector<float>(), b = expected.to_vector<float>();
  size_t worst = 0;
  float worst_difference = -1.0f;
  int wrong = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float difference = std::isnan(a[i]) ? INFINITY : std::abs(a[i] - b[i]);
    if (difference > 1e-5f * std::max(1.0f, std::abs(b[i]))) ++wrong;
    if (difference > worst_difference) {
      worst = i;
      worst_difference = difference;
    }
  }
  const std::string stale =
      previous.defined() ? fmt::format("{}", graph_test::max_relative_error(got, previous)) : "none (first call)";
  return fmt::format("round {} call {}: error {}; {} of {} elements wrong; worst at {}: {} vs {}; error against "
                     "the previous call's result: {}",
                     round, call, error, wrong, a.size(), worst, a[worst], b[worst], stale);
}

// Two threads, each compiling a new function per round and calling it four times, checked against
// eager on the same inputs. Returns one failure message per thread ("" when it passed).
std::vector<std::string> compile_from_two_threads(Device device, const char* mode) {
  std::vector<std::string> failures(2);
  auto work = [&](int thread) {
    try {
      manual_seed(100 + static_cast<uint64_t>(thread));
      const Tensor weight = randn({128, 128}, {.device = device});
      const auto forward = [&](const Tensor& x) { return relu(matmul(x, weight)) * 0.5 + 1.0; };
      for (int round = 0; round < 10; ++round) {
        // A new function each round: under reduce_overhead each captures on its second call,
        // while the other thread may be launching or capturing its own.
        auto compiled = ember::compile(forward, {.fullgraph = true, .mode = mode});
        Tensor previous;  // the last call's eager result: a stale read would match it
        for (int call = 0; call < 4; ++call) {
          const Tensor x = randn({32, 128}, {.device = device});
          const Tensor got = compiled(x).to(kCPU);
          const Tensor expected = forward(x).to(kCPU);
          const double error = graph_test::max_relative_error(got, expected);
          if (error > 1e-5) throw std::runtime_error(describe_mismatch(round, call, got, expected, previous, error));
          previous = expected;
        }
      }
    } catch (const std::exception& error) {
      failures[static_cast<size_t>(thread)] = fmt::format("thread {}: {}", thread, error.what());
    }
  };
  std::thread first(work, 0), second(work, 1);
  first.join();
  second.join();
  return failures;
}

}  // namespace

TEST_CASE("compile: functions compiled and called from two threads at once equal eager") {
  for (const std::string& failure : compile_from_two_threads(kCPU, "default")) CHECK_MESSAGE(failure.empty(), failure);
}

namespace {

// Runs run_call(call) for calls [first, first + 2 * per_thread) from two threads, alternating;
// returns each thread's first failure ("" when it had none).
std::vector<std::string> call_from_two_threads(int first, int per_thread,
                                               const std::function<std::string(int)>& run_call) {
  std::vector<std::string> failures(2);
  auto work = [&](int thread) {
    std::string& failure = failures[static_cast<size_t>(thread)];
    try {
      for (int k = 0; k < per_thread && failure.empty(); ++k) failure = run_call(first + 2 * k + thread);
    } catch (const std::exception& error) {
      failure = fmt::format("thread {}: {}", thread, error.what());
    }
  };
  std::thread one(work, 0), other(work, 1);
  one.join();
  other.join();
  return failures;
}

std::string compare_loss(int call, double got, double want) {
  return std::abs(got - want) <= 1e-5 * std::max(1.0, std::abs(want))
             ? std::string()
             : fmt::format("call {}: {} instead of {}", call, got, want);
}

}  // namespace

// Calls are serialized per compiled function (its entries, counters and executors are shared);
// each call's compiled backward runs on the thread that calls backward(), one at a time too.
TEST_CASE("compile: one compiled function called from two threads at once equals eager, its backward too") {
  constexpr int kPerThread = 150;
  constexpr int kWarmup = 3;  // on this thread: warm-up, capture, one more call
  manual_seed(7);
  const Tensor init = mul(randn({64, 64}), 0.2);
  std::vector<Tensor> inputs;
  for (int call = 0; call < kWarmup + 2 * kPerThread; ++call) inputs.push_back(randn({32, 64}));
  {
    // Inference: the lowered executor re-points its input buffers and runs over one arena. Grad
    // mode is per thread: each call turns it off.
    const auto rows_of = [&](const Tensor& x) { return sum(mul(tanh(matmul(x, init)), add(x, 1.0)), {1}); };
    auto compiled = ember::compile(rows_of, {.fullgraph = true});
    const auto run_call = [&](int call) {
      NoGradGuard no_grad;
      const Tensor& x = inputs[static_cast<size_t>(call)];
      const double error = graph_test::max_relative_error(compiled(x), rows_of(x));
      return error <= 1e-5 ? std::string() : fmt::format("call {}: relative error {}", call, error);
    };
    for (int call = 0; call < kWarmup; ++call) REQUIRE(run_call(call).empty());
    for (const std::string& failure : call_from_two_threads(kWarmup, kPerThread, run_call))
      CHECK_MESSAGE(failure.empty(), failure);
    CHECK(compiled.state().captures() == 1);
  }
  // Training: each call's loss, then its backward through the compiled graph into one parameter.
  const Tensor weight = init.clone().requires_grad_(), eager_weight = init.clone().requires_grad_();
  const auto loss_of = [](const Tensor& x, const Tensor& w) { return sum(mul(tanh(matmul(x, w)), x)); };
  std::vector<double> expected;
  for (const Tensor& x : inputs) {
    Tensor loss = loss_of(x, eager_weight);
    expected.push_back(loss.item());
    loss.backward();
  }
  auto compiled = ember::compile([&](const Tensor& x) { return loss_of(x, weight); }, {.fullgraph = true});
  const auto run_call = [&](int call) {
    Tensor loss = compiled(inputs[static_cast<size_t>(call)]);
    const double got = loss.item();
    loss.backward();
    return compare_loss(call, got, expected[static_cast<size_t>(call)]);
  };
  for (int call = 0; call < kWarmup; ++call) REQUIRE(run_call(call).empty());
  for (const std::string& failure : call_from_two_threads(kWarmup, kPerThread, run_call))
    CHECK_MESSAGE(failure.empty(), failure);
  CHECK(graph_test::max_relative_error(weight.grad(), eager_weight.grad()) <= 1e-4);
  CHECK(compiled.state().captures() == 1);
}

#ifdef EMBER_HAS_CUDA
// The same on a GPU without CUDA graphs: both threads' kernels on the legacy default stream, the
// generated kernels' libraries shared. Next to the reduce_overhead case below, a failure of one
// and not the other tells the graph replay's ordering from the rest.
TEST_CASE("cuda compile: functions compiled and called from two threads at once equal eager") {
  if (!ember::testing::cuda_or_skip()) return;
  for (const std::string& failure : compile_from_two_threads(Device{DeviceType::CUDA, 0}, "default"))
    CHECK_MESSAGE(failure.empty(), failure);
}
#endif

#ifdef EMBER_HAS_CUDA
// Every capture and launch goes through the device's one capture stream: a launch queued there by
// one thread while the other captures would land in that graph (or break the capture).
TEST_CASE("cuda compile: reduce_overhead functions captured and replayed from two threads at once") {
  if (!ember::testing::cuda_or_skip()) return;
  std::string why_no_graphs;
  if (!graph::CudaGraphReplay::available(&why_no_graphs)) {
    ember::testing::skip_gpu_case("CUDA graphs unavailable: " + why_no_graphs);
    return;
  }
  const Device cuda{DeviceType::CUDA, 0};
  for (const std::string& failure : compile_from_two_threads(cuda, "reduce_overhead"))
    CHECK_MESSAGE(failure.empty(), failure);
}
#endif

}  // namespace test_compile_threads_streams
