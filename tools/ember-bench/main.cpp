// ember-bench: the benchmark tool. One JSON line per run with --json, a readable table otherwise.
//   ember-bench --model seed|wide|large|cnn --mode eager|compiled|reduce_overhead|compiled_forward --device cpu --threads 1 --steps 200 --warmup 20 --json
//   ember-bench --model seed --mode compiled --batch-sizes 32,16,8 --dynamic auto|true|false --json
//   ember-bench --micro dispatch|gemm|small_gemm|pointwise|many_parameters --threads 1 --json
//   ember-bench --micro cuda --device cuda --json
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/ember-bench/bench.h"
#include "tools/ember-bench/model_measure.h"
#include "tools/integer_option.h"

namespace {

// Ten million: far past any run in docs/PERFORMANCE.md (the longest has 4,000 steps); the two
// step times kept per measured step (8 bytes each) still fit in memory, and warmup + steps
// cannot overflow an int.
constexpr int kMaxSteps = 10'000'000;
// Each thread is an OpenMP worker: libgomp crashes trying to start 100,000 of them, and 1024 is
// past the core count of any machine ember runs on.
constexpr int kMaxThreads = 1024;

// Combinations CLI11 cannot see that would otherwise be ignored without a word, or measure
// something other than what the JSON says: throws CLI::ValidationError naming the option.
void check_combinations(const CLI::App& app, const ember::bench::RunOptions& options) {
  if (options.mode == "eager") {
    // Options that only a compiled run reads.
    for (const char* name : {"--explain", "--fuse", "--dynamic"}) {
      if (app.get_option(name)->count() > 0)
        throw CLI::ValidationError(name, "applies to the compiled modes only; --mode eager compiles nothing");
    }
  }
  if (options.compile_every_segment && !ember::bench::runs_as_segments(options))
    throw CLI::ValidationError("--compile-every-segment",
                               "needs --host-read with --mode compiled or reduce_overhead: only a graph break in "
                               "the compiled step makes segments");
  if (options.mode != "eager") {
    const int needed = ember::bench::compiled_warmup_calls(options);
    const int calls_per_size = ember::bench::runs_as_segments(options) ? 3 : 2;
    if (options.warmup < needed)
      throw CLI::ValidationError(
          "--warmup", fmt::format("--mode {}{} needs {} or more, got {}: the first {} calls of each batch "
                                  "size run eagerly, capture or compile, and would be timed as steps",
                                  options.mode, options.host_read ? " --host-read" : "", needed, options.warmup,
                                  calls_per_size));
  }
}

// "32,16,8" -> {32, 16, 8}; every piece a decimal integer >= 1, none empty.
std::vector<int64_t> parse_batch_sizes(const std::string& text) {
  std::vector<int64_t> sizes;
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string piece = text.substr(start, comma - start);
    const std::string problem = ember::tools::integer_in<int64_t>(1)(piece);
    if (!problem.empty())
      throw CLI::ValidationError("--batch-sizes", fmt::format("expected integers >= 1 separated by commas, got '{}'",
                                                              text));
    sizes.push_back(std::stoll(piece));
    if (comma == text.size()) return sizes;
    start = comma + 1;
  }
}

// A micro-benchmark measures one fixed thing on the CPU (cuda: on --device), so the options of a
// model run would be dropped without a word; --micro dispatch --device cuda would report a CPU
// figure under a CUDA request.
void check_micro_options(const CLI::App& app, const std::string& micro) {
  for (const char* name : {"--model", "--mode", "--warmup", "--batch-sizes", "--dynamic", "--host-read",
                           "--compile-every-segment", "--lr-schedule", "--explain", "--fuse"}) {
    if (app.get_option(name)->count() > 0)
      throw CLI::ValidationError(name, fmt::format("applies to model runs only; --micro {} does not read it", micro));
  }
  if (micro != "cuda" && app.get_option("--device")->count() > 0)
    throw CLI::ValidationError("--device", fmt::format("--micro {} runs on the CPU; only --micro cuda takes a device",
                                                       micro));
}

}  // namespace

int main(int argc, char** argv) {
  using ember::tools::integer_in;
  ember::bench::RunOptions options;
  std::string micro;
  CLI::App app{"ember-bench: reference MLP training benchmarks and micro-benchmarks"};
  app.add_option("--model", options.model, "reference model: seed, wide, large (MLPs) or cnn (convolutions)")
      ->check(CLI::IsMember({"seed", "wide", "large", "cnn"}));
  app.add_option("--mode", options.mode,
                 "eager, compiled (ember::compile; JSON adds compile_ms, planned_bytes), reduce_overhead "
                 "(compiled, replayed as CUDA graphs: CUDA only) or compiled_forward (only the forward and loss "
                 "compiled; backward() runs its compiled backward, the optimizer step is eager)")
      ->check(CLI::IsMember({"eager", "compiled", "reduce_overhead", "compiled_forward"}));
  app.add_option("--device", options.device, "cpu, cuda or cuda:N (default: the default device)");
  app.add_option("--threads", options.threads, "CPU threads for kernels")->transform(integer_in(1, kMaxThreads));
  app.add_option("--steps", options.steps, "measured training steps")->transform(integer_in(1, kMaxSteps));
  app.add_option("--warmup", options.warmup,
                 "untimed steps before measuring; compiled modes need each batch size's first two calls "
                 "(three with --host-read) among them")
      ->transform(integer_in(0, kMaxSteps));
  app.add_option("--micro", micro,
                 "run a micro-benchmark instead: dispatch, gemm, small_gemm, pointwise, many_parameters (CPU; "
                 "--steps replays per count) or cuda")
      ->check(CLI::IsMember({"dispatch", "gemm", "small_gemm", "pointwise", "many_parameters", "cuda"}));
  app.add_option("--lr-schedule", options.lr_schedule,
                 "none, or cosine: a CosineAnnealingLR stepped inside the training step")
      ->check(CLI::IsMember({"none", "cosine"}));
  // One text split here rather than CLI11's delimiter: that drops empty pieces ("32,,16") and, given
  // only ",", takes the next argument as the batch size.
  std::string batch_sizes;
  app.add_option("--batch-sizes", batch_sizes,
                 "batch sizes the steps cycle through, e.g. 32,16,8 (default: the model's batch); with a compiled "
                 "mode the JSON adds each capture's size and time")
      ->each([&options](const std::string& text) { options.batch_sizes = parse_batch_sizes(text); });
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
  app.add_option("--checkpoint-segments", options.checkpoint_segments,
                 "run the model through utils::checkpoint_sequential in this many segments (activation "
                 "checkpointing: peak_bytes falls, the step recomputes all but the last segment's forward)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--json", options.json, "print one JSON line per run");
  try {
    app.parse(argc, argv);
    if (micro.empty()) check_combinations(app, options);
    else check_micro_options(app, micro);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }

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
    } else if (micro == "many_parameters") {
      result = ember::bench::run_many_parameters(options);
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
