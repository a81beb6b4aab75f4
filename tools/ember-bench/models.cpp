// The reference models of ember-bench, trained through the public API exactly as a user would:
//   seed: Linear(100,256)-ReLU-Linear(256,10), batch 32, Adam lr 1e-3, 10,000 samples
//   wide: 784-1024-1024-1024-10 with ReLU, batch 256, Adam lr 1e-3, 20,000 samples
//   large: 8 Linear layers of width 4096 with GELU, batch 4096, AdamW lr 1e-3, 32,768 samples,
//          under bf16 autocast (a GPU model: one step is 3.3 TFLOP)
// Data is synthetic (x ~ N(0,1), labels uniform); batches are row slices of one tensor, as in
// tools/reference/pytorch_mlp.py, so the figures compare the training step alone.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>

#include "graph/compile.h"
#include "graph/fusion.h"
#include "graph/segments.h"
#include "kernels/cpu/gemm_library.h"
#include "tools/ember-bench/bench.h"

namespace ember::bench {

namespace {

struct ModelSpec {
  std::vector<int64_t> widths;
  int64_t batch;
  int64_t samples;
  bool gelu = false;       // GELU between layers instead of ReLU
  bool adamw = false;      // AdamW instead of Adam
  bool autocast = false;   // forward under bf16 autocast
};

ModelSpec spec_for(const std::string& name) {
  if (name == "seed") return {{100, 256, 10}, 32, 10000};
  if (name == "wide") return {{784, 1024, 1024, 1024, 10}, 256, 20000};
  if (name == "large") return {std::vector<int64_t>(9, 4096), 4096, 4096 * 8, true, true, true};
  fail("ember-bench: unknown model '{}'", name);
}

// FLOPs of one training step: forward GEMMs 2*B*in*out per layer; backward computes the weight
// gradient for every layer and the input gradient for all but the first (the data needs none).
double step_flops(const ModelSpec& spec) {
  double flops = 0.0;
  for (size_t i = 0; i + 1 < spec.widths.size(); ++i) {
    const double gemm = 2.0 * static_cast<double>(spec.batch * spec.widths[i] * spec.widths[i + 1]);
    flops += gemm * (i == 0 ? 2.0 : 3.0);
  }
  return flops;
}

// CPU time of this thread: on a shared machine it excludes time the scheduler gave to others,
// so single-threaded runs stay comparable under load (reported beside the wall time).
double thread_cpu_us() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) * 1e-3;
}

// The loss of one batch; the large model runs its forward under bf16 autocast, as PyTorch's
// reference does (the loss itself is computed in float32 either way).
Tensor forward_loss(nn::Sequential& model, const Tensor& x, const Tensor& y, bool autocast) {
  const AutocastGuard guard(kBFloat16, autocast);
  return cross_entropy(model->forward(x), y);
}

nn::Sequential build_model(const ModelSpec& spec) {
  nn::Sequential model;
  for (size_t i = 0; i + 1 < spec.widths.size(); ++i) {
    model->push_back(nn::Linear(spec.widths[i], spec.widths[i + 1]));
    if (i + 2 < spec.widths.size()) {
      if (spec.gelu) model->push_back(nn::GELU());
      else model->push_back(nn::ReLU());
    }
  }
  return model;
}

}  // namespace

nlohmann::json run_model(const RunOptions& options) {
  using Clock = std::chrono::steady_clock;
  set_num_threads(options.threads);
  manual_seed(0);
  const ModelSpec spec = spec_for(options.model);
  const Device device = options.device.empty() ? default_device() : Device::parse(options.device);
  const int64_t classes = spec.widths.back();

  Tensor x_all = randn({spec.samples, spec.widths.front()}).to(device);
  Tensor y_all = randint(0, classes, {spec.samples}).to(device);
  nn::Sequential model = build_model(spec);
  model->to(device);
  std::unique_ptr<optim::Optimizer> optimizer;
  if (spec.adamw) optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions{.lr = 1e-3});
  else optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 1e-3});

  std::unique_ptr<optim::LRScheduler> scheduler;
  if (options.lr_schedule == "cosine")
    scheduler = std::make_unique<optim::CosineAnnealingLR>(*optimizer, options.warmup + options.steps, 1e-5);

  const std::vector<int64_t> sizes = options.batch_sizes.empty() ? std::vector<int64_t>{spec.batch} : options.batch_sizes;
  for (int64_t size : sizes)
    check(size >= 1 && size <= spec.samples, "ember-bench: batch size {} is not in [1, {}]", size, spec.samples);
  auto train_step = [&](const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = forward_loss(model, x, y, spec.autocast);
    loss.backward();
    if (options.host_read && !std::isfinite(loss.item())) return loss;
    optimizer->step();
    if (scheduler) scheduler->step();
    return loss;
  };
  // --mode compiled: the same step through ember::compile. Call 1 runs eagerly (warm-up: Adam
  // creates its moments), call 2 captures, runs the passes and lowers the graph (compile_ms),
  // later calls replay. --mode reduce_overhead also records the lowered steps as CUDA graphs on
  // call 2 (inside compile_ms) and relaunches them.
  // --mode compiled_forward compiles only the forward and the loss, as torch.compile(model) is
  // used: the loss it returns carries the compiled backward, which loss.backward() runs; the
  // optimizer step stays eager.
  const bool forward_only = options.mode == "compiled_forward";
  const bool compiled = options.mode != "eager";
  check(options.mode != "reduce_overhead" || device.is_cuda(),
        "--mode reduce_overhead replays CUDA graphs; {} is not a CUDA device", device);
  std::optional<bool> dynamic;
  if (options.dynamic != "auto") dynamic = options.dynamic == "true";
  auto compiled_step = ember::compile(
      train_step,
      {.fullgraph = !options.host_read,
       .compile_every_segment = options.compile_every_segment,
       .fuse = options.fuse,
       .mode = options.mode == "reduce_overhead" ? "reduce_overhead" : "default",
       .dynamic = dynamic});
  auto compiled_forward = ember::compile(
      [&](const Tensor& x, const Tensor& y) { return forward_loss(model, x, y, spec.autocast); },
      {.fullgraph = true, .fuse = options.fuse, .dynamic = dynamic});
  const graph::CompiledFunction& compiled_state = forward_only ? compiled_forward.state() : compiled_step.state();
  double compile_ms = 0.0;  // the first capture's call
  double segment_compile_ms = 0.0;  // --host-read: the calls that compiled segments, together
  nlohmann::json capture_calls = nlohmann::json::array();
  auto step = [&](int64_t index) {
    const int64_t size = sizes[index % sizes.size()];
    const int64_t row = (index / static_cast<int64_t>(sizes.size()) % (spec.samples / size)) * size;
    Tensor x = x_all.slice(0, row, row + size);
    Tensor y = y_all.slice(0, row, row + size);
    if (!compiled) return train_step(x, y);
    const int captures_before = compiled_state.captures_made();
    const int segments_before = compiled_state.segments() ? compiled_state.segments()->segments() : 0;
    const Clock::time_point start = Clock::now();
    Tensor loss;
    if (forward_only) {
      optimizer->zero_grad();
      loss = compiled_forward(x, y);
      loss.backward();
      optimizer->step();
      if (scheduler) scheduler->step();
    } else {
      loss = compiled_step(x, y);
    }
    if (compiled_state.captures_made() != captures_before) {
      synchronize(device);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (capture_calls.empty()) compile_ms = ms;
      capture_calls.push_back({{"batch", size}, {"ms", ms}});
    } else if (compiled_state.segments() && compiled_state.segments()->segments() != segments_before) {
      synchronize(device);  // --host-read: the calls that compiled segments
      segment_compile_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    }
    return loss;
  };

  const int total = options.warmup + options.steps;
  StepTimes times;
  StepTimes cpu_times;
  Tensor loss;
  int64_t peak_bytes = 0;
  int64_t backend_allocations_at_start = 0;
  for (int i = 0; i < total; ++i) {
    // The first measured step records peak memory: reset, then zero_grad, forward, backward and
    // the optimizer step (its state already exists after warm-up).
    const bool measure_memory = i == options.warmup;
    if (measure_memory) {
      synchronize(device);
      reset_peak_memory_stats(device);
      backend_allocations_at_start = memory_stats(device).num_backend_allocations;
    }
    // The thread's CPU clock is a system call (0.6-1.2 µs on the dev VM), the wall clock is not:
    // reading the former outside the wall-clock window keeps it out of step_us.
    const double cpu_start = thread_cpu_us();
    const Clock::time_point start = Clock::now();
    loss = step(i);
    synchronize(device);  // a CUDA step has only been queued when step() returns
    const double elapsed_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    const double cpu_us = thread_cpu_us() - cpu_start;
    if (measure_memory) peak_bytes = memory_stats(device).peak_allocated_bytes;
    if (i >= options.warmup) {
      times.step_us.push_back(elapsed_us);
      cpu_times.step_us.push_back(cpu_us);
    }
    progress(options, i, total);
  }

  const double median_us = times.median();
  double mean_batch = 0.0;
  for (int64_t size : sizes) mean_batch += static_cast<double>(size) / static_cast<double>(sizes.size());
  const double flops = step_flops(spec) * mean_batch / static_cast<double>(spec.batch);
  nlohmann::json compiled_fields;
  if (compiled) {
    check(!compiled_state.fell_back_to_eager(), "ember-bench: the compiled step fell back to eager execution");
    if (const graph::SegmentCache* segments = compiled_state.segments()) {
      // Each place in the step either compiled (and replays) or runs eagerly: none runs kernel by
      // kernel after its first time.
      check(compiled_state.segmented_calls() >= options.steps &&
                segments->kernel_runs() <= static_cast<int>(segments->eager_places().size()),
            "ember-bench: the compiled step did not run as compiled segments (use --warmup 3 or more)");
      nlohmann::json kernels = nlohmann::json::array();
      for (const graph::SegmentCache::Info& segment : segments->info()) kernels.push_back(segment.kernels);
      compiled_fields = {{"compile_ms", compile_ms},
                         {"segment_compile_ms", segment_compile_ms},
                         {"segments", segments->segments()},
                         {"eager_places", segments->eager_places().size()},
                         {"segment_kernels", kernels}};
    } else {
      if (sizes.size() == 1)
        check(total >= 3 && compiled_state.captures() == 1,
              "ember-bench: the compiled step did not capture exactly once (use --warmup 2 or more)");
      const graph::Executor& executor = *compiled_state.executor();
      const graph::MemoryPlan* plan = executor.memory_plan();
      compiled_fields = {{"compile_ms", compile_ms},
                         {"fuse", options.fuse},
                         {"dynamic", options.dynamic},
                         {"captures", capture_calls},
                         {"executor", plan ? "lowered" : "dispatching"},
                         {"cuda_graphs", executor.uses_cuda_graphs()},
                         {"fused_nodes", graph::fused_ops(executor.graph()).size()},
                         {"graph_nodes", executor.graph().nodes.size()},
                         {"planned_bytes", plan ? plan->arena_bytes : 0},
                         {"planned_unshared_bytes", plan ? plan->unshared_bytes : 0}};
      if (const graph::Executor* backward = compiled_state.backward_executor())
        compiled_fields["backward_graph_nodes"] = backward->graph().nodes.size();
    }
    if (options.explain) std::fprintf(stderr, "%s", compiled_state.explain().c_str());
  }
  nlohmann::json result = {{"model", options.model},
          {"mode", options.mode},
          {"device", device.str()},
          {"threads", options.threads},
          {"batch", sizes.size() == 1 ? nlohmann::json(sizes[0]) : nlohmann::json(sizes)},
          {"steps", options.steps},
          {"step_us_median", median_us},
          {"step_us_p10", times.percentile(0.1)},
          {"step_us_p90", times.percentile(0.9)},
          {"step_thread_cpu_us_median", cpu_times.median()},
          {"samples_per_s", mean_batch / (median_us * 1e-6)},
          {"gflop_per_step", flops * 1e-9},
          {"gflop_per_s", flops / (median_us * 1e3)},
          {"peak_bytes", peak_bytes},
          {"reserved_bytes", memory_stats(device).reserved_bytes},
          // Device (e.g. cudaMalloc) allocations during the measured steps: 0 is the goal.
          {"backend_allocations_in_steps", memory_stats(device).num_backend_allocations - backend_allocations_at_start},
          {"final_loss", loss.item()},
          {"lr_schedule", options.lr_schedule},
          {"host_read", options.host_read},
          {"compile_every_segment", options.compile_every_segment},
          {"final_lr", optimizer->get_lr(0)}};
  if (compiled) result.update(compiled_fields);
  if (!device.is_cuda()) result["cpu_gemm"] = cpu::gemm_library_description();
  return result;
}

}  // namespace ember::bench
