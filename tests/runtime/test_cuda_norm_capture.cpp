// cuDNN layer_norm under a CUDA-graph capture. Creating a cuDNN handle or building a plan
// allocates device memory, which a capture does not allow, so while a thread captures, cuDNN runs
// only with a handle and plan that thread made before; otherwise ember's kernels are captured.
// Both captured graphs must compute the CPU op's result when launched.
#include <doctest/doctest.h>

#include "skip_case.h"

#ifdef EMBER_HAS_CUDA

#include <thread>

#include "cuda_norm_test_util.h"
#include "cuda_test_util.h"
#include "numeric_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_graph.h"
#include "runtime/cuda/cudnn_layer_norm.h"
#include "runtime/ember.h"

namespace test_cuda_norm_capture {

using namespace ember;
using ember::cuda_test::kCuda0;

namespace {

const Attrs kAttrs{{"normalized_shape", Dims{1024}}, {"eps", 1e-5}};

Tensor layer_norm_output(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const std::vector<Tensor> inputs{x, weight, bias};
  return dispatch(OpCall{lookup_op("layer_norm"), inputs, kAttrs})[0];
}

// Captures `out.copy_(layer_norm(x, weight, bias))` on `stream`, launches it once and waits.
// Returns how many cuDNN forward runs the capture recorded.
int64_t capture_and_launch(const cuda::Stream& stream, Tensor& out, const Tensor& x, const Tensor& weight,
                           const Tensor& bias) {
  const cuda::StreamGuard on_stream(stream);
  const int64_t runs_before = cuda::cudnn_layer_norm_runs(false);
  cuda::begin_capture(stream);
  out.copy_(layer_norm_output(x, weight, bias));
  const cuda::GraphExec graph = cuda::instantiate(cuda::end_capture(stream));
  const int64_t recorded = cuda::cudnn_layer_norm_runs(false) - runs_before;
  cuda::launch(graph, stream);
  synchronize(kCuda0);
  cuda::destroy(graph, stream);
  return recorded;
}

}  // namespace

TEST_CASE("cuda layer_norm: a capture uses cuDNN only with a handle and plan its thread made before") {
  if (!ember::testing::cuda_or_skip() || !cuda_test::cudnn_or_skip()) return;
  const cuda_test::LayerNormChoice choice("cudnn");
  const Tensor x = randn({64, 1024}, {.device = kCPU});
  const Tensor weight = randn({1024}, {.device = kCPU});
  const Tensor bias = randn({1024}, {.device = kCPU});
  const std::vector<double> want = ember::testing::values_of(layer_norm_output(x, weight, bias));
  const Tensor device_x = x.to(kCuda0), device_weight = weight.to(kCuda0), device_bias = bias.to(kCuda0);
  synchronize(kCuda0);

  // A fresh thread has no cuDNN handle: its capture records ember's kernels.
  std::thread([&] {
    Tensor out = zeros({64, 1024}, {.device = kCuda0});
    synchronize(kCuda0);
    CHECK(capture_and_launch(cuda::Stream::from_pool(kCuda0), out, device_x, device_weight, device_bias) == 0);
    ember::testing::check_close(out.to(kCPU), want, 1e-4);
    // Once the thread has run this shape through cuDNN outside a capture, its capture records cuDNN.
    const int64_t runs_before = cuda::cudnn_layer_norm_runs(false);
    (void)layer_norm_output(device_x, device_weight, device_bias);
    const bool cudnn_ran = cuda::cudnn_layer_norm_runs(false) == runs_before + 1;
    CHECK_MESSAGE(cudnn_ran, "cuDNN did not run outside the capture: "
                                 << cuda::cudnn_layer_norm_refusal(false, 0, kFloat32, 64, 1024));
    if (!cudnn_ran) return;  // (a REQUIRE would throw out of the thread)
    out.zero_();
    synchronize(kCuda0);
    CHECK(capture_and_launch(cuda::Stream::from_pool(kCuda0), out, device_x, device_weight, device_bias) == 1);
    ember::testing::check_close(out.to(kCPU), want, 1e-4);
  }).join();
}

#else

TEST_CASE("cuda layer_norm under capture: not built") {
  ember::testing::skip_case("CUDA unavailable: ember was built without CUDA");
}

#endif  // EMBER_HAS_CUDA

}  // namespace test_cuda_norm_capture
