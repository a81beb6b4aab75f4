// CUDA micro-benchmarks (`--micro cuda`), the figures issue 3's targets are stated in:
//   copy      device-to-device copy bandwidth at 256 MiB: the ceiling for pointwise kernels
//   pointwise ember's pointwise ops over 256 MiB float32, as GB/s and as a fraction of the copy
//   launch    host microseconds per eager op on small CUDA tensors (dispatch + launch, no sync),
//             and, in the same bursts, its parts: an empty kernel's launch (the driver's share,
//             the floor under the op), a device guard, and a dispatched empty() (allocation)
//   gemm      ember's bf16 mm at 8192^3 next to a raw cuBLASLt call of the same shape
//   layer_norm ember's kernel next to cuDNN's (the measurement EMBER_LAYER_NORM=auto decides by)
//   relu_epilogue_keeps_nan  per dtype, whether linear fuses its ReLU into cuBLASLt here
//   fused_reduction a pointwise op with a sum at its end, eager (two kernels) and compiled (one
//             generated kernel), at the shape of the large model's bias gradients
// Device time comes from CUDA events on the current stream, host time from the steady clock.
#include <chrono>

#include "graph/compile.h"
#include "graph/fused_launch.h"
#include "graph/fusion.h"
#include "tools/ember-bench/bench.h"

#ifdef EMBER_HAS_CUDA
#include "kernels/cuda/launch_floor.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cublaslt_relu_probe.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/norm_cuda_ops.h"
#endif

namespace ember::bench {

#ifdef EMBER_HAS_CUDA
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call of `run` on `device`, timed with events around `iterations` calls after warm-up.
double device_seconds(Device device, int iterations, const std::function<void()>& run) {
  for (int i = 0; i < 3; ++i) run();
  const cuda::Stream stream = cuda::current_stream(device);
  cuda::Event start(true);
  cuda::Event stop(true);
  start.record(stream);
  for (int i = 0; i < iterations; ++i) run();
  stop.record(stream);
  stop.synchronize();
  return start.elapsed_milliseconds(stop) * 1e-3 / iterations;
}

nlohmann::json copy_bandwidth(Device device, int64_t bytes) {
  const Tensor source = empty({bytes}, {.dtype = kBool, .device = device});
  const Tensor destination = empty({bytes}, {.dtype = kBool, .device = device});
  const cuda::Stream stream = cuda::current_stream(device);
  const double seconds = device_seconds(device, 20, [&] {
    cuda::copy_on_device(destination.raw_data_ptr(), source.raw_data_ptr(), static_cast<size_t>(bytes), stream);
  });
  // Bytes read plus bytes written, the way the pointwise figures count them.
  return {{"bytes", bytes}, {"us", seconds * 1e6}, {"gb_per_s", 2.0 * static_cast<double>(bytes) / seconds * 1e-9}};
}

// ember's bf16 mm at 8192^3 (the size the GEMM target is stated at), as TFLOP/s.
nlohmann::json cuda_gemm_figures(Device device) {
  constexpr int64_t kSize = 8192;
  const Tensor a = randn({kSize, kSize}, {.device = device}).to(kBFloat16);
  const Tensor b = randn({kSize, kSize}, {.device = device}).to(kBFloat16);
  const double flops = 2.0 * static_cast<double>(kSize) * kSize * kSize;
  const double ember_seconds = device_seconds(device, 10, [&] { (void)mm(a, b); });
  const double raw_seconds = cuda::benchmark_raw_gemm(kSize, kSize, kSize, kBFloat16, 10);
  return {{"m", kSize}, {"n", kSize}, {"k", kSize}, {"dtype", "bfloat16"},
          {"ember_mm_tflop_per_s", flops / ember_seconds * 1e-12},
          {"raw_cublaslt_tflop_per_s", flops / raw_seconds * 1e-12},
          {"ember_fraction_of_raw", raw_seconds / ember_seconds}};
}

// layer_norm forward and backward, ember's kernels vs cuDNN, on the shapes the models use.
nlohmann::json layer_norm_figures() {
  nlohmann::json rows_out = nlohmann::json::array();
  for (DType dtype : {kFloat32, kBFloat16}) {
    for (int64_t cols : {int64_t{1024}, int64_t{4096}}) {
      for (const auto pass : {cuda::LayerNormPass::Forward, cuda::LayerNormPass::Backward}) {
        constexpr int64_t kRows = 8192;
        nlohmann::json row{{"dtype", fmt::format("{}", dtype)},
                           {"rows", kRows},
                           {"cols", cols},
                           {"pass", pass == cuda::LayerNormPass::Forward ? "forward" : "backward"}};
        row["ember_us"] = cuda::benchmark_layer_norm(kRows, cols, dtype, cuda::LayerNormImpl::Ember, 20, pass) * 1e6;
        try {
          row["cudnn_us"] = cuda::benchmark_layer_norm(kRows, cols, dtype, cuda::LayerNormImpl::Cudnn, 20, pass) * 1e6;
        } catch (const std::exception& error) {
          row["cudnn_error"] = error.what();
        }
        rows_out.push_back(row);
      }
    }
  }
  return rows_out;
}

// (g * x).sum(dim) over bf16 [4096, 4096]: the shape of large's bias gradients (dim 0: a column
// sum over the batch) and of a row sum (dim 1). Eager runs the multiply (g and x read, the
// product written) and a split reduction of the product; the compiled function one generated
// kernel that reads g and x only (4 bytes per element: the figure's bytes). Returning the product
// too would keep it out of the group ("its value is returned").
nlohmann::json fused_reduction_figures(Device device, double copy_gb_per_s) {
  constexpr int64_t kSize = 4096;
  const Tensor g = randn({kSize, kSize}, {.device = device}).to(kBFloat16);
  const Tensor x = randn({kSize, kSize}, {.device = device}).to(kBFloat16);
  const double bytes = 2.0 * 2.0 * static_cast<double>(kSize * kSize);
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t dim : {int64_t{0}, int64_t{1}}) {
    auto step = [dim](const Tensor& a, const Tensor& b) { return (a * b).sum(Dims{dim}); };
    auto compiled = ember::compile(step, {.fullgraph = true});
    for (int i = 0; i < 3; ++i) (void)compiled(g, x);  // eager warm-up, capture and compile, replay
    const double eager_seconds = device_seconds(device, 20, [&] { (void)step(g, x); });
    const double compiled_seconds = device_seconds(device, 20, [&] { (void)compiled(g, x); });
    const graph::Executor* executor = compiled.state().executor();
    const std::vector<const graph::FusedOpDef*> fused =
        executor == nullptr ? std::vector<const graph::FusedOpDef*>{} : graph::fused_ops(executor->graph());
    nlohmann::json launch;  // the fused kernel's grid (x, and y: pieces) and block
    if (fused.size() == 1) {
      const graph::FusedCudaLaunch used = graph::fused_cuda_launch(fused[0]->group);
      launch = {{"grid", {used.grid, used.pieces}}, {"block", {used.block_x, used.block_y}}};
    }
    rows.push_back({{"shape", {kSize, kSize}}, {"dtype", "bfloat16"}, {"sum_dim", dim},
                    {"eager_us", eager_seconds * 1e6}, {"compiled_us", compiled_seconds * 1e6},
                    {"compiled_fraction_of_copy", bytes / compiled_seconds * 1e-9 / copy_gb_per_s},
                    {"fused_nodes", fused.size()}, {"fused_launch", launch}});
  }
  return rows;
}

}  // namespace
#endif

nlohmann::json run_cuda_micro(const RunOptions& options) {
#ifndef EMBER_HAS_CUDA
  (void)options;
  fail("ember-bench --micro cuda: this build has no CUDA backend");
#else
  const Device device = options.device.empty() ? default_device() : Device::parse(options.device);
  check(device.is_cuda(), "ember-bench --micro cuda needs a CUDA device (got {})", device);
  nlohmann::json result{{"benchmark", "cuda_micro"}, {"device", device.str()}};

  constexpr int64_t kBytes = int64_t{256} << 20;
  const nlohmann::json copy = copy_bandwidth(device, kBytes);
  const double copy_gb_per_s = copy["gb_per_s"];
  result["copy"] = copy;

  const int64_t elements = kBytes / 4;
  const Tensor x = randn({elements}, {.device = device});
  const Tensor y = randn({elements}, {.device = device});
  struct PointwiseCase {
    const char* name;
    double bytes_per_element;
    std::function<void()> run;
  };
  const std::vector<PointwiseCase> cases{
      {"clone", 8, [&] { (void)clone(x); }},
      {"relu", 8, [&] { (void)relu(x); }},
      {"mul_scalar", 8, [&] { (void)mul(x, 0.5); }},
      {"add", 12, [&] { (void)add(x, y); }},
      {"gelu", 8, [&] { (void)gelu(x); }},
  };
  nlohmann::json pointwise = nlohmann::json::array();
  for (const PointwiseCase& c : cases) {
    const double seconds = device_seconds(device, 20, c.run);
    const double gb_per_s = c.bytes_per_element * static_cast<double>(elements) / seconds * 1e-9;
    pointwise.push_back({{"op", c.name}, {"us", seconds * 1e6}, {"gb_per_s", gb_per_s},
                         {"fraction_of_copy", gb_per_s / copy_gb_per_s}});
  }
  result["pointwise"] = pointwise;

  // Host cost of one eager op: dispatch, allocation from the cache and the kernel launch.
  {
    const Tensor a = randn({4}, {.device = device});
    const Tensor b = randn({4}, {.device = device});
    for (int i = 0; i < 2000; ++i) (void)add(a, b);
    synchronize(device);
    constexpr int kOps = 20000;
    const int64_t mallocs_before = memory_stats(device).num_backend_allocations;
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < kOps; ++i) (void)add(a, b);
    const double host_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kOps;
    synchronize(device);
    // The same in bursts of 256, the device drained between them (untimed): 20,000 launches in a
    // row fill the driver's launch queue, after which a launch waits for the GPU to retire an
    // earlier kernel, and the figure above becomes the GPU's tiny-kernel rate where the host is
    // faster than it. This one is the host's cost alone.
    constexpr int kBurst = 256;
    auto in_bursts = [&](const std::function<void()>& launch) {
      double total_us = 0.0;
      for (int burst = 0; burst < kOps / kBurst; ++burst) {
        const Clock::time_point burst_start = Clock::now();
        for (int i = 0; i < kBurst; ++i) launch();
        total_us += std::chrono::duration<double, std::micro>(Clock::now() - burst_start).count();
        synchronize(device);
      }
      return total_us / (kOps / kBurst * kBurst);
    };
    const double burst_us = in_bursts([&] { (void)add(a, b); });
    void* stream = cuda::current_stream(device).handle;
    const double empty_us = in_bursts([&] { cuda::launch_checked(cuda::launch_empty_kernel(stream)); });
    // The parts of the op's host cost that launch nothing, timed the same way: a device guard
    // (the runtime's current-device calls), and a dispatched factory that only allocates its
    // output from the cache and frees it. The op's cost minus these and the empty kernel's is
    // the rest of ember's own work (shape rule, operands, the kernel's argument packing).
    const double guard_us = in_bursts([&] { cuda::DeviceGuard guard(device); });
    const double alloc_us = in_bursts([&] { (void)empty({4}, {.device = device}); });
    result["launch"] = {{"op", "add [4] + [4] float32"}, {"host_us_per_op", host_us},
                        {"host_us_per_op_in_bursts", burst_us},
                        {"host_us_per_empty_kernel_in_bursts", empty_us},
                        {"host_us_per_device_guard_in_bursts", guard_us},
                        {"host_us_per_empty_tensor_in_bursts", alloc_us},
                        {"backend_allocations", memory_stats(device).num_backend_allocations - mallocs_before}};
  }
  result["gemm"] = cuda_gemm_figures(device);
  result["layer_norm"] = layer_norm_figures();
  result["fused_reduction"] = fused_reduction_figures(device, copy_gb_per_s);
  nlohmann::json keeps_nan;
  for (DType dtype : {kFloat32, kBFloat16, kFloat16})
    keeps_nan[fmt::format("{}", dtype)] =
        cuda::relu_epilogue_keeps_nan(dtype, device.index, cuda::current_stream(device).handle);
  result["relu_epilogue_keeps_nan"] = keeps_nan;
  return result;
#endif
}

}  // namespace ember::bench
