// Micro-benchmarks: eager dispatch overhead and the FP32 GEMM ceiling of this machine (CPU tensors
// whatever the default device: EMBER_DEVICE=cuda must not turn them into CUDA figures).
#include <chrono>

#include "kernels/cpu/gemm_library.h"
#include "kernels/cpu/openblas_library.h"
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
  Tensor a = randn({4}, {.device = kCPU});
  Tensor b = randn({4}, {.device = kCPU});
  // 64-bit: --steps goes up to ten million, a thousand ops each.
  const int64_t iterations = int64_t{std::max(options.steps, 1)} * 1000;
  for (int i = 0; i < 10000; ++i) (void)add(a, b);  // warm the allocator's cache
  StepTimes batches;
  for (int batch = 0; batch < 20; ++batch) {
    const Clock::time_point start = Clock::now();
    for (int64_t i = 0; i < iterations / 20; ++i) (void)add(a, b);
    batches.step_us.push_back(seconds_since(start) * 1e6 / static_cast<double>(iterations / 20));
  }
  return {{"benchmark", "dispatch_overhead"}, {"op", "add [4] + [4] float32"},
          {"threads", options.threads},       {"ops", iterations},
          {"us_per_op_median", batches.median()}, {"us_per_op_p10", batches.percentile(0.1)},
          {"us_per_op_p90", batches.percentile(0.9)}};
}

// The FP32 GEMM ceiling through ember's own mm (tiles, threads and the library behind them), for
// each CPU GEMM library this build has, side by side in one run. The top-level fields are the
// default library's.
nlohmann::json run_gemm_peak(const RunOptions& options) {
  set_num_threads(options.threads);
  std::vector<cpu::GemmLibrary> libraries{cpu::GemmLibrary::Eigen};
  if (cpu::openblas_available()) libraries.push_back(cpu::GemmLibrary::OpenBlas);
  const cpu::GemmLibrary default_library = cpu::gemm_library();
  nlohmann::json per_library = nlohmann::json::array();
  nlohmann::json result = {{"benchmark", "gemm_peak"}, {"dtype", "float32"}, {"threads", options.threads}};
  for (cpu::GemmLibrary library : libraries) {
    cpu::set_gemm_library(library);
    nlohmann::json sizes = nlohmann::json::array();
    double best = 0.0;
    for (int64_t n : {256, 512, 1024}) {
      const Tensor a = randn({n, n}, {.device = kCPU});
      const Tensor b = randn({n, n}, {.device = kCPU});
      (void)mm(a, b);  // warm up
      const int repeats = std::max(3, static_cast<int>(2e9 / (2.0 * n * n * n)));
      StepTimes times;
      for (int r = 0; r < repeats; ++r) {
        const Clock::time_point start = Clock::now();
        (void)mm(a, b);
        times.step_us.push_back(seconds_since(start) * 1e6);
      }
      const double gflops = 2.0 * n * n * n / (times.percentile(0.1) * 1e3);
      best = std::max(best, gflops);
      sizes.push_back({{"n", n}, {"gflop_per_s", gflops}});
    }
    const std::string name(cpu::gemm_library_name(library));
    per_library.push_back({{"library", name}, {"sizes", sizes}, {"peak_gflop_per_s", best}});
    if (library == cpu::GemmLibrary::OpenBlas) per_library.back()["openblas_core"] = cpu::openblas_core();
    if (library == default_library) {
      result["library"] = cpu::gemm_library_description();
      result["sizes"] = sizes;
      result["peak_gflop_per_s"] = best;
    }
  }
  cpu::set_gemm_library(default_library);
  result["libraries"] = per_library;
  return result;
}

}  // namespace ember::bench
