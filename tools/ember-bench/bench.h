// ember-bench's pieces: the reference models, micro-benchmarks and result reporting.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/ember.h"

namespace ember::bench {

struct RunOptions {
  std::string model = "seed";
  std::string mode = "eager";
  std::string device;  // empty: the default device
  int threads = 1;
  int steps = 200;
  int warmup = 20;
  // "none", or "cosine": a CosineAnnealingLR over the run, stepped inside the training step (and so
  // inside the compiled function, where each replay repeats it without recompiling).
  std::string lr_schedule = "none";
  // Batch sizes the steps cycle through (step i takes batch_sizes[i % n]); empty: the model's own.
  std::vector<int64_t> batch_sizes;
  // ember::compile's `dynamic` option (CompileOptions::dynamic): "auto", "true" or "false".
  std::string dynamic = "auto";
  // The step reads the loss on the host after backward() and skips the update when it is not
  // finite: a graph break, so compiled modes run the step as compiled segments.
  bool host_read = false;
  // With host_read: compile every segment, also CPU ones that would not pay for their deferral
  // (CompileOptions::compile_every_segment), to measure the compiled form.
  bool compile_every_segment = false;
  bool explain = false;  // compiled modes: print CompiledFunction::explain() on stderr after the run
  bool fuse = true;      // compiled modes: false replays the graph without generated kernels
  bool json = false;
  // utils::checkpoint_sequential over the model in this many segments (0: no checkpointing): the
  // activations it frees show in peak_bytes, the recomputation in the step time.
  int checkpoint_segments = 0;
};

// Times `steps` calls of a training step after `warmup` calls and fills the common fields.
struct StepTimes {
  std::vector<double> step_us;
  double median() const;
  double percentile(double fraction) const;
};

// Trains one of the reference models (seed, wide, large, cnn) and returns ember-bench's JSON line.
nlohmann::json run_model(const RunOptions& options);

// Eager dispatch overhead: a tiny add (4 floats) in a loop, microseconds per op.
nlohmann::json run_dispatch_overhead(const RunOptions& options);

// The core's FP32 GEMM throughput measured with Eigen directly (the ceiling for our GEMMs).
nlohmann::json run_gemm_peak(const RunOptions& options);

// The seed step's five products through the small GEMM kernel, next to the core's multiply-add
// peak at the build's vector width (GFLOP/s and fraction of it per product).
nlohmann::json run_small_gemm_micro(const RunOptions& options);

// Throughput of representative pointwise kernels over 1M floats (GB/s, ns per element).
nlohmann::json run_pointwise_throughput(const RunOptions& options);

// The compile stage's cost per parameter at 100, 400 and 1,600 small parameters: capture time and
// replay median of a full training step and of an optimizer step compiled alone.
nlohmann::json run_many_parameters(const RunOptions& options);

// CUDA figures: copy bandwidth, pointwise GB/s at 256 MiB, host cost per eager op, bf16 GEMM.
nlohmann::json run_cuda_micro(const RunOptions& options);

// Prints a result as JSON (one line) or as a readable table.
void report(const nlohmann::json& result, bool json);

// A progress line on stderr for long runs (readable mode only).
void progress(const RunOptions& options, int64_t step, int64_t total);

}  // namespace ember::bench
