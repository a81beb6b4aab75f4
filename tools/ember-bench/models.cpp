// The reference models of ember-bench, trained through the public API exactly as a user would:
//   seed: Linear(100,256)-ReLU-Linear(256,10), batch 32, Adam lr 1e-3, 10,000 samples
//   wide: 784-1024-1024-1024-10 with ReLU, batch 256, Adam lr 1e-3, 20,000 samples
//   large: 8 Linear layers of width 4096 with GELU, batch 4096, AdamW lr 1e-3, 32,768 samples,
//          under bf16 autocast (a GPU model: one step is 3.3 TFLOP)
//   cnn:   three 3x3 convolutions and a Linear on [1, 28, 28] images (cnn_model.h), batch 64,
//          Adam lr 1e-3, 8,192 samples
// Data is synthetic (x ~ N(0,1), labels uniform); batches are row slices of one tensor, as in
// tools/reference/pytorch_mlp.py, so the figures compare the training step alone.
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include "graph/compile.h"
#include "graph/segments.h"
#include "kernels/cpu/gemm_library.h"
#include "tools/ember-bench/bench.h"
#include "tools/ember-bench/cnn_model.h"
#include "tools/ember-bench/model_measure.h"

namespace ember::bench {

namespace {

struct ModelSpec {
  std::vector<int64_t> widths;
  int64_t batch;
  int64_t samples;
  bool gelu = false;       // GELU between layers instead of ReLU
  bool adamw = false;      // AdamW instead of Adam
  bool autocast = false;   // forward under bf16 autocast
  bool cnn = false;        // the convolutional model of cnn_model.h (widths: its input, its classes)
};

ModelSpec spec_for(const std::string& name) {
  if (name == "seed") return {{100, 256, 10}, 32, 10000};
  if (name == "wide") return {{784, 1024, 1024, 1024, 10}, 256, 20000};
  if (name == "large") return {std::vector<int64_t>(9, 4096), 4096, 4096 * 8, true, true, true};
  if (name == "cnn") return {.widths = {kCnnImage.product(), kCnnClasses}, .batch = 64, .samples = 8192, .cnn = true};
  fail("unknown model '{}'", name);
}

// FLOPs of one training step: forward GEMMs 2*B*in*out per layer; backward computes the weight
// gradient for every layer and the input gradient for all but the first (the data needs none).
double step_flops(const ModelSpec& spec) {
  if (spec.cnn) return cnn_step_flops(spec.batch);
  double flops = 0.0;
  for (size_t i = 0; i + 1 < spec.widths.size(); ++i) {
    const double gemm = 2.0 * static_cast<double>(spec.batch * spec.widths[i] * spec.widths[i + 1]);
    flops += gemm * (i == 0 ? 2.0 : 3.0);
  }
  return flops;
}

// The loss of one batch; the large model runs its forward under bf16 autocast, as PyTorch's
// reference does (the loss itself is computed in float32 either way).
Tensor forward_loss(nn::Sequential& model, const Tensor& x, const Tensor& y, bool autocast, int checkpoint_segments) {
  const AutocastGuard guard(kBFloat16, autocast);
  if (checkpoint_segments > 0) return cross_entropy(utils::checkpoint_sequential(model, checkpoint_segments, x), y);
  return cross_entropy(model->forward(x), y);
}

nn::Sequential build_model(const ModelSpec& spec, Device device) {
  if (spec.cnn) return build_cnn(device);
  nn::Sequential model;
  for (size_t i = 0; i + 1 < spec.widths.size(); ++i) {
    model->push_back(nn::Linear(spec.widths[i], spec.widths[i + 1], {.device = device}));
    if (i + 2 < spec.widths.size()) {
      if (spec.gelu) model->push_back(nn::GELU());
      else model->push_back(nn::ReLU());
    }
  }
  return model;
}

// What a run trains, on its device: the data, the model, its optimizer and scheduler.
struct Training {
  ModelSpec spec;
  Device device;
  Tensor x_all;  // every sample; batches are row slices
  Tensor y_all;
  nn::Sequential model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LRScheduler> scheduler;  // --lr-schedule cosine
};

Training set_up(const RunOptions& options) {
  manual_seed(0);
  Training training{.spec = spec_for(options.model),
                    .device = options.device.empty() ? default_device() : Device::parse(options.device)};
  const ModelSpec& spec = training.spec;
  // Made on the run's device, never on the default one: --device cpu must work where EMBER_DEVICE
  // names a CUDA device this machine lacks, and gives the same data with or without a GPU.
  Dims sample_shape = {spec.samples, spec.widths.front()};
  if (spec.cnn) sample_shape = {spec.samples, kCnnImage[0], kCnnImage[1], kCnnImage[2]};
  training.x_all = randn(sample_shape, {.device = training.device});
  training.y_all = randint(0, spec.widths.back(), {spec.samples}, {.device = training.device});
  training.model = build_model(spec, training.device);
  if (spec.adamw)
    training.optimizer = std::make_unique<optim::AdamW>(training.model->parameters(), optim::AdamWOptions{.lr = 1e-3});
  else
    training.optimizer = std::make_unique<optim::Adam>(training.model->parameters(), optim::AdamOptions{.lr = 1e-3});
  if (options.lr_schedule == "cosine")
    training.scheduler =
        std::make_unique<optim::CosineAnnealingLR>(*training.optimizer, int64_t{options.warmup} + options.steps, 1e-5);
  return training;
}

}  // namespace

nlohmann::json run_model(const RunOptions& options) {
  using Clock = std::chrono::steady_clock;
  set_num_threads(options.threads);
  Training training = set_up(options);
  const ModelSpec& spec = training.spec;
  const Device device = training.device;
  nn::Sequential& model = training.model;
  optim::Optimizer& optimizer = *training.optimizer;
  optim::LRScheduler* scheduler = training.scheduler.get();

  const std::vector<int64_t> sizes = options.batch_sizes.empty() ? std::vector<int64_t>{spec.batch} : options.batch_sizes;
  for (int64_t size : sizes)
    check(size >= 1 && size <= spec.samples, "batch size {} is not in [1, {}]", size, spec.samples);
  // One training step with `loss_of` computing the loss: forward_loss itself, or (compiled_forward)
  // its compiled form. Every mode runs this one step, so --host-read reads the loss in each.
  auto step_with = [&](auto& loss_of, const Tensor& x, const Tensor& y) {
    optimizer.zero_grad();
    Tensor loss = loss_of(x, y);
    loss.backward();
    if (options.host_read && !std::isfinite(loss.item())) return loss;
    optimizer.step();
    if (scheduler) scheduler->step();
    return loss;
  };
  auto eager_loss = [&](const Tensor& x, const Tensor& y) {
    return forward_loss(model, x, y, spec.autocast, options.checkpoint_segments);
  };
  auto train_step = [&](const Tensor& x, const Tensor& y) { return step_with(eager_loss, x, y); };
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
  auto compiled_forward = ember::compile(eager_loss, {.fullgraph = true, .fuse = options.fuse, .dynamic = dynamic});
  const graph::CompiledFunction& compiled_state = forward_only ? compiled_forward.state() : compiled_step.state();
  CaptureTimes captures;
  auto step = [&](int64_t index) {
    const int64_t size = sizes[index % sizes.size()];
    const int64_t row = (index / static_cast<int64_t>(sizes.size()) % (spec.samples / size)) * size;
    Tensor x = training.x_all.slice(0, row, row + size);
    Tensor y = training.y_all.slice(0, row, row + size);
    if (!compiled) return train_step(x, y);
    const int captures_before = compiled_state.captures_made();
    const int segments_before = compiled_state.segments() ? compiled_state.segments()->segments() : 0;
    const Clock::time_point start = Clock::now();
    const Tensor loss = forward_only ? step_with(compiled_forward, x, y) : compiled_step(x, y);
    if (compiled_state.captures_made() != captures_before) {
      synchronize(device);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (captures.calls.empty()) captures.compile_ms = ms;
      captures.calls.push_back({{"batch", size}, {"ms", ms}});
      captures.last_compiling_call = index;
    } else if (compiled_state.segments() && compiled_state.segments()->segments() != segments_before) {
      synchronize(device);  // --host-read: the calls that compiled segments
      captures.segment_compile_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      captures.last_compiling_call = index;
    }
    return loss;
  };

  const TimedSteps timed = time_steps(options, device, step);
  const double median_us = timed.wall.median();
  double mean_batch = 0.0;
  for (int64_t size : sizes) mean_batch += static_cast<double>(size) / static_cast<double>(sizes.size());
  const double flops = step_flops(spec) * mean_batch / static_cast<double>(spec.batch);
  nlohmann::json compiled_result;
  if (compiled)
    compiled_result = compiled_fields(options, compiled_state, captures, static_cast<int64_t>(sizes.size()));
  nlohmann::json result = {{"model", options.model},
          {"mode", options.mode},
          {"device", device.str()},
          {"threads", options.threads},
          {"batch", sizes.size() == 1 ? nlohmann::json(sizes[0]) : nlohmann::json(sizes)},
          {"steps", options.steps},
          {"step_us_median", median_us},
          {"step_us_p10", timed.wall.percentile(0.1)},
          {"step_us_p90", timed.wall.percentile(0.9)},
          {"step_thread_cpu_us_median", timed.thread_cpu.median()},
          {"samples_per_s", mean_batch / (median_us * 1e-6)},
          {"gflop_per_step", flops * 1e-9},
          {"gflop_per_s", flops / (median_us * 1e3)},
          {"peak_bytes", timed.peak_bytes},
          {"reserved_bytes", memory_stats(device).reserved_bytes},
          // Device (e.g. cudaMalloc) allocations during the measured steps: 0 is the goal.
          {"backend_allocations_in_steps", timed.backend_allocations},
          {"final_loss", timed.last_loss.item()},
          {"lr_schedule", options.lr_schedule},
          {"host_read", options.host_read},
          {"compile_every_segment", options.compile_every_segment},
          {"checkpoint_segments", options.checkpoint_segments},
          {"final_lr", optimizer.get_lr(0)}};
  if (compiled) result.update(compiled_result);
  if (!device.is_cuda()) result["cpu_gemm"] = cpu::gemm_library_description();
  return result;
}

}  // namespace ember::bench
