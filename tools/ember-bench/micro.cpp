// Micro-benchmarks: eager dispatch overhead and the FP32 GEMM ceiling of this machine.
#include <Eigen/Core>
#include <chrono>

#include "tools/ember-bench/bench.h"

namespace ember::bench {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
}  // namespace

nlohmann::json run_dispatch_overhead(const RunOptions& options) {
  set_num_threads(options.threads);
  Tensor a = randn({4});
  Tensor b = randn({4});
  const int iterations = std::max(options.steps, 1) * 1000;
  for (int i = 0; i < 10000; ++i) (void)add(a, b);  // warm the allocator's cache
  StepTimes batches;
  for (int batch = 0; batch < 20; ++batch) {
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < iterations / 20; ++i) (void)add(a, b);
    batches.step_us.push_back(seconds_since(start) * 1e6 / (iterations / 20));
  }
  return {{"benchmark", "dispatch_overhead"}, {"op", "add [4] + [4] float32"},
          {"threads", options.threads},       {"ops", iterations},
          {"us_per_op_median", batches.median()}, {"us_per_op_p10", batches.percentile(0.1)},
          {"us_per_op_p90", batches.percentile(0.9)}};
}

nlohmann::json run_gemm_peak(const RunOptions& options) {
  set_num_threads(options.threads);  // also sets Eigen's thread count
  nlohmann::json sizes = nlohmann::json::array();
  double best = 0.0;
  for (int n : {256, 512, 1024}) {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n);
    Eigen::MatrixXf b = Eigen::MatrixXf::Random(n, n);
    Eigen::MatrixXf c(n, n);
    c.noalias() = a * b;  // warm up
    const int repeats = std::max(2, static_cast<int>(2e9 / (2.0 * n * n * n)));
    StepTimes times;
    for (int r = 0; r < repeats; ++r) {
      const Clock::time_point start = Clock::now();
      c.noalias() = a * b;
      times.step_us.push_back(seconds_since(start) * 1e6);
    }
    const double gflops = 2.0 * n * n * n / (times.percentile(0.1) * 1e3);
    best = std::max(best, gflops);
    sizes.push_back({{"n", n}, {"gflop_per_s", gflops}});
  }
  return {{"benchmark", "gemm_peak"}, {"library", "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                                                  std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                                  std::to_string(EIGEN_MINOR_VERSION)},
          {"dtype", "float32"}, {"threads", options.threads}, {"sizes", sizes}, {"peak_gflop_per_s", best}};
}

}  // namespace ember::bench
