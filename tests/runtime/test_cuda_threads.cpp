// Eager CUDA ops from several host threads at once. Each thread's current stream is the legacy
// default stream, so their kernels interleave on one stream: whatever a multi-kernel op keeps
// between its kernels (cuBLASLt's split-K partial sums in its workspace) must be the thread's own.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "runtime/ember.h"
#include "skip_case.h"

using namespace ember;

namespace {

// The largest |got - expected| / max(|expected|, 1) over the elements.
double max_relative_error(const std::vector<double>& got, const std::vector<double>& expected) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - expected[i]) / std::max(std::abs(expected[i]), 1.0));
  return worst;
}

// Products of thread-own operands on cuda:0, each against its float64 CPU reference; "" when all
// matched, else the first mismatch.
std::string multiply_on_cuda(int thread) {
  try {
    const Device cuda{DeviceType::CUDA, 0};
    std::string failure;
    for (int call = 0; call < 40 && failure.empty(); ++call) {
      // A short k (one pass) and a long one (split-K likely: few output tiles, much work each).
      const int64_t k = call % 2 == 0 ? 128 : 4096;
      const TensorOptions cpu64{.dtype = kFloat64, .device = kCPU};  // the default generator is locked
      const Tensor a = randn({32, k}, cpu64), b = randn({k, 128}, cpu64);
      const Tensor product = matmul(a.to(kFloat32).to(cuda), b.to(kFloat32).to(cuda));
      const double error =
          max_relative_error(product.to(kCPU).to(kFloat64).to_vector<double>(), matmul(a, b).to_vector<double>());
      // float32 operands rounded from float64, accumulated in float32 (TF32 is off by default).
      if (error > 1e-4) failure = fmt::format("thread {} call {} (k {}): relative error {}", thread, call, k, error);
    }
    return failure;
  } catch (const std::exception& error) {
    return fmt::format("thread {}: {}", thread, error.what());
  }
}

}  // namespace

TEST_CASE("cuda: GEMMs from two threads at once on the legacy stream each get their own product") {
  if (!ember::testing::cuda_or_skip()) return;
  std::vector<std::string> failures(2);
  std::thread first([&] { failures[0] = multiply_on_cuda(0); });
  std::thread second([&] { failures[1] = multiply_on_cuda(1); });
  first.join();
  second.join();
  for (const std::string& failure : failures) CHECK_MESSAGE(failure.empty(), failure);
}
