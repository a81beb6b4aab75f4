// A compiled function called under another CUDA stream than its previous call: both calls use the
// executor's arena (and, under reduce_overhead, its staged inputs), so the later call's stream must
// wait for the earlier one on the device (graph/call_stream_order.h). Checked in both modes with
// the earlier call queued behind milliseconds of work on a side stream.
#include <doctest/doctest.h>

#include <chrono>
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

    const cuda::Stream side = cuda::Stream::create(cuda);
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
    CHECK(graph_test::max_relative_error(on_side.to(kCPU), forward(x).to(kCPU)) <= 1e-6);
    CHECK(graph_test::max_relative_error(on_default.to(kCPU), forward(shifted).to(kCPU)) <= 1e-6);
  }
}
#endif
