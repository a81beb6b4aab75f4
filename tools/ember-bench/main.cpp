// ember-bench: the benchmark tool. One JSON line per run with --json, a readable table otherwise.
//   ember-bench --model seed|wide|large --mode eager|compiled|reduce_overhead|compiled_forward --device cpu --threads 1 --steps 200 --warmup 20 --json
//   ember-bench --model seed --mode compiled --batch-sizes 32,16,8 --dynamic auto|true|false --json
//   ember-bench --micro dispatch|gemm|small_gemm|pointwise --threads 1 --json
//   ember-bench --micro cuda --device cuda --json
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/ember-bench/bench.h"
#include "tools/integer_option.h"

namespace {

// Ten million: far past any run in docs/PERFORMANCE.md (the longest has 4,000 steps); the two
// step times kept per measured step (8 bytes each) still fit in memory, and warmup + steps
// cannot overflow an int.
constexpr int kMaxSteps = 10'000'000;
// Each thread is an OpenMP worker: libgomp crashes trying to start 100,000 of them, and 1024 is
// past the core count of any machine ember runs on.
constexpr int kMaxThreads = 1024;


}  // namespace

int main(int argc, char** argv) {
  using ember::tools::integer_in;
  ember::bench::RunOptions options;
  std::string micro;
  CLI::App app{"ember-bench: reference MLP training benchmarks and micro-benchmarks"};
  app.add_option("--model", options.model, "reference model: seed, wide or large")
      ->check(CLI::IsMember({"seed", "wide", "large"}));
  app.add_option("--mode", options.mode,
                 "eager, compiled (ember::compile; JSON adds compile_ms, planned_bytes), reduce_overhead "
                 "(compiled, replayed as CUDA graphs: CUDA only) or compiled_forward (only the forward and loss "
                 "compiled; backward() runs its compiled backward, the optimizer step is eager)")
      ->check(CLI::IsMember({"eager", "compiled", "reduce_overhead", "compiled_forward"}));
  app.add_option("--device", options.device, "cpu, cuda or cuda:N (default: the default device)");
  app.add_option("--threads", options.threads, "CPU threads for kernels")->check(integer_in(1, kMaxThreads));
  app.add_option("--steps", options.steps, "measured training steps")->check(integer_in(1, kMaxSteps));
  app.add_option("--warmup", options.warmup, "untimed steps before measuring")->check(integer_in(0, kMaxSteps));
  app.add_option("--micro", micro,
                 "run a micro-benchmark instead: dispatch, gemm, small_gemm, pointwise (CPU) or cuda")
      ->check(CLI::IsMember({"dispatch", "gemm", "small_gemm", "pointwise", "cuda"}));
  app.add_option("--lr-schedule", options.lr_schedule,
                 "none, or cosine: a CosineAnnealingLR stepped inside the training step")
      ->check(CLI::IsMember({"none", "cosine"}));
  app.add_option("--batch-sizes", options.batch_sizes,
                 "batch sizes the steps cycle through, e.g. 32,16,8 (default: the model's batch); with a compiled "
                 "mode the JSON adds each capture's size and time")
      ->delimiter(',')
      ->check(integer_in<int64_t>(1));
  app.add_option("--dynamic", options.dynamic,
                 "compiled modes: auto (a dim becomes dynamic when its size changes), true or false (every size "
                 "compiled on its own)")
      ->check(CLI::IsMember({"auto", "true", "false"}));
  app.add_flag("--host-read", options.host_read,
               "the step reads its loss on the host after backward() and skips the update when it is not finite; "
               "compiled modes then run it as compiled segments split at that read where they pay, eagerly elsewhere "
               "(JSON adds segments and eager_places)");
  app.add_flag("--compile-every-segment", options.compile_every_segment,
               "with --host-read: compile every segment, also CPU ones that would not pay for their deferral");
  app.add_flag("--fuse,!--no-fuse", options.fuse,
               "compiled modes: --no-fuse replays every node as its own kernel, no generated ones (what fusion gives)");
  app.add_flag("--explain", options.explain,
               "compiled modes: print what the compile stage did (captures, recompiles, graphs, guards) on stderr");
  app.add_flag("--json", options.json, "print one JSON line per run");
  CLI11_PARSE(app, argc, argv);

  try {
    nlohmann::json result;
    if (micro == "dispatch") {
      result = ember::bench::run_dispatch_overhead(options);
    } else if (micro == "gemm") {
      result = ember::bench::run_gemm_peak(options);
    } else if (micro == "small_gemm") {
      result = ember::bench::run_small_gemm_micro(options);
    } else if (micro == "cuda") {
      result = ember::bench::run_cuda_micro(options);
    } else if (micro == "pointwise") {
      result = ember::bench::run_pointwise_throughput(options);
    } else {
      result = ember::bench::run_model(options);
    }
    ember::bench::report(result, options.json);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ember-bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
