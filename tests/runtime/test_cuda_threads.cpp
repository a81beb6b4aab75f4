// Eager CUDA ops from several host threads at once. Each thread's current stream is the legacy
// default stream, so their library calls queue work on one stream: overlapping cuBLASLt calls
// there gave each thread the other's product (cublaslt_plan.h); cuDNN's layer_norm is checked too.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/ember.h"
#include "skip_case.h"
#ifdef EMBER_HAS_CUDA
#include "cuda_norm_test_util.h"
#endif

namespace test_cuda_threads {

using namespace ember;

namespace {

// The largest |got - expected| / max(|expected|, 1) over the elements.
double max_relative_error(const std::vector<double>& got, const std::vector<double>& expected) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - expected[i]) / std::max(std::abs(expected[i]), 1.0));
  return worst;
}

// The op on thread-own operands on cuda:0, 40 times over `shapes` in turn, each result against the
// op in float64 on the CPU; "" when all matched, else the first mismatch.
using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;
std::string run_on_cuda(int thread, const BinaryOp& op, const std::vector<std::pair<Dims, Dims>>& shapes) {
  try {
    const Device cuda{DeviceType::CUDA, 0};
    std::string failure;
    for (int call = 0; call < 40 && failure.empty(); ++call) {
      const auto& [a_shape, b_shape] = shapes[static_cast<size_t>(call) % shapes.size()];
      const TensorOptions cpu64{.dtype = kFloat64, .device = kCPU};  // the default generator is locked
      const Tensor a = randn(a_shape, cpu64), b = randn(b_shape, cpu64);
      const Tensor on_gpu = op(a.to(kFloat32).to(cuda), b.to(kFloat32).to(cuda));
      const double error =
          max_relative_error(on_gpu.to(kCPU).to(kFloat64).to_vector<double>(), op(a, b).to_vector<double>());
      // float32 operands rounded from float64, computed in float32 (TF32 is off by default).
      if (error > 1e-4) failure = fmt::format("thread {} call {} ({} and {}): relative error {}", thread, call,
                                              a_shape, b_shape, error);
    }
    return failure;
  } catch (const std::exception& error) {
    return fmt::format("thread {}: {}", thread, error.what());
  }
}

// `op` from two threads at once; a CHECK per thread.
void check_from_two_threads(const BinaryOp& op, const std::vector<std::pair<Dims, Dims>>& shapes) {
  std::vector<std::string> failures(2);
  std::thread first([&] { failures[0] = run_on_cuda(0, op, shapes); });
  std::thread second([&] { failures[1] = run_on_cuda(1, op, shapes); });
  first.join();
  second.join();
  for (const std::string& failure : failures) CHECK_MESSAGE(failure.empty(), failure);
}

}  // namespace

TEST_CASE("cuda: GEMMs from two threads at once on the legacy stream each get their own product") {
  if (!ember::testing::cuda_or_skip()) return;
  // A short k (one pass) and a long one (split-K likely: few output tiles, much work each).
  check_from_two_threads([](const Tensor& a, const Tensor& b) { return matmul(a, b); },
                         {{{32, 128}, {128, 128}}, {{32, 4096}, {4096, 128}}});
}

#ifdef EMBER_HAS_CUDA
TEST_CASE("cuda: layer_norm through cuDNN from two threads at once each gets its own result") {
  if (!ember::testing::cuda_or_skip() || !cuda_test::cudnn_or_skip()) return;
  const cuda_test::LayerNormChoice cudnn("cudnn");  // set before the threads start, read by them
  check_from_two_threads([](const Tensor& x, const Tensor& weight) { return layer_norm(x, {1024}, weight); },
                         {{{32, 1024}, {1024}}, {{256, 1024}, {1024}}});
}
#endif

}  // namespace test_cuda_threads
