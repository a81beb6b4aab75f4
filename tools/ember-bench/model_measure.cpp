// The timed step loop and a compiled run's JSON fields (model_measure.h).
#include "tools/ember-bench/model_measure.h"

#include <chrono>
#include <ctime>

#include "graph/fusion.h"
#include "graph/segments.h"

namespace ember::bench {

namespace {

// CPU time of this thread: on a shared machine it excludes time the scheduler gave to others,
// so single-threaded runs stay comparable under load (reported beside the wall time).
double thread_cpu_us() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) * 1e-3;
}

}  // namespace

bool runs_as_segments(const RunOptions& options) {
  return options.host_read && (options.mode == "compiled" || options.mode == "reduce_overhead");
}

int compiled_warmup_calls(const RunOptions& options) {
  const int batch_size_count = options.batch_sizes.empty() ? 1 : static_cast<int>(options.batch_sizes.size());
  return batch_size_count * 2 + (runs_as_segments(options) ? batch_size_count : 0);
}

TimedSteps time_steps(const RunOptions& options, Device device, const std::function<Tensor(int64_t)>& step) {
  using Clock = std::chrono::steady_clock;
  const int64_t total = int64_t{options.warmup} + options.steps;
  TimedSteps timed;
  int64_t backend_allocations_at_start = 0;
  for (int64_t i = 0; i < total; ++i) {
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
    timed.last_loss = step(i);
    synchronize(device);  // a CUDA step has only been queued when step() returns
    const double elapsed_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    const double cpu_us = thread_cpu_us() - cpu_start;
    if (measure_memory) timed.peak_bytes = memory_stats(device).peak_allocated_bytes;
    if (i >= options.warmup) {
      timed.wall.step_us.push_back(elapsed_us);
      timed.thread_cpu.step_us.push_back(cpu_us);
    }
    progress(options, i, total);
  }
  timed.backend_allocations = memory_stats(device).num_backend_allocations - backend_allocations_at_start;
  return timed;
}

nlohmann::json compiled_fields(const RunOptions& options, const graph::CompiledFunction& state,
                               const CaptureTimes& captures, int64_t batch_size_count) {
  check(!state.fell_back_to_eager(), "the compiled step fell back to eager execution");
  // The warm-up compiled_warmup_calls asks for covers what ember::compile is documented to do; a
  // recompile it did not foresee (a guard that failed later) would put a compile in step_us.
  check(captures.last_compiling_call < options.warmup,
        "call {} of the step captured or compiled, after the {} warm-up calls: its time is in the measured steps "
        "(use --warmup {} or more)",
        captures.last_compiling_call + 1, options.warmup, captures.last_compiling_call + 1);
  nlohmann::json fields;
  if (const graph::SegmentCache* segments = state.segments()) {
    // Each place in the step either compiled (and replays) or runs eagerly: none runs kernel by
    // kernel after its first time.
    check(state.segmented_calls() >= options.steps &&
              segments->kernel_runs() <= static_cast<int>(segments->eager_places().size()),
          "the compiled step did not run as compiled segments");
    nlohmann::json kernels = nlohmann::json::array();
    for (const graph::SegmentCache::Info& segment : segments->info()) kernels.push_back(segment.kernels);
    fields = {{"compile_ms", captures.compile_ms},
              {"segment_compile_ms", captures.segment_compile_ms},
              {"segments", segments->segments()},
              {"eager_places", segments->eager_places().size()},
              {"segment_kernels", kernels}};
  } else {
    if (batch_size_count == 1)
      check(state.captures() == 1, "the compiled step captured {} times, not once", state.captures());
    const graph::Executor& executor = *state.executor();
    const graph::MemoryPlan* plan = executor.memory_plan();
    fields = {{"compile_ms", captures.compile_ms},
              {"fuse", options.fuse},
              {"dynamic", options.dynamic},
              {"captures", captures.calls},
              {"executor", plan ? "lowered" : "dispatching"},
              {"cuda_graphs", executor.uses_cuda_graphs()},
              {"fused_nodes", graph::fused_ops(executor.graph()).size()},
              {"graph_nodes", executor.graph().nodes.size()},
              {"planned_bytes", plan ? plan->arena_bytes : 0},
              {"planned_unshared_bytes", plan ? plan->unshared_bytes : 0}};
    if (const graph::Executor* backward = state.backward_executor())
      fields["backward_graph_nodes"] = backward->graph().nodes.size();
  }
  if (options.explain) std::fprintf(stderr, "%s", state.explain().c_str());
  return fields;
}

}  // namespace ember::bench
