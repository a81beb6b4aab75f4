// The measuring half of ember-bench's model runs (models.cpp): the timed loop of training steps,
// and the JSON fields a compiled run adds about its captures, graph and memory plan.
#pragma once

#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "graph/compile.h"
#include "tools/ember-bench/bench.h"

namespace ember::bench {

// Whether the step runs as compiled segments: --host-read in a mode that compiles the whole step
// (the read breaks its graph). compiled_forward's read happens outside the compiled forward.
bool runs_as_segments(const RunOptions& options);

// The untimed calls a compiled mode needs before no call captures or compiles: the first two
// calls of each batch size (ember::compile runs call 1 eagerly to create the optimizer's state,
// and a batch size's first call after that captures), and a third for segments (the capture
// meets the graph break; the segments compile on the next call).
int compiled_warmup_calls(const RunOptions& options);

// What the timed loop measured.
struct TimedSteps {
  StepTimes wall;        // per measured step, microseconds
  StepTimes thread_cpu;  // this thread's CPU time per measured step
  Tensor last_loss;
  int64_t peak_bytes = 0;           // peak allocated during the first measured step
  int64_t backend_allocations = 0;  // device allocations (cudaMalloc) during the measured steps
};

// Runs step(0) .. step(warmup + steps - 1), timing the last `steps` of them on `device`.
TimedSteps time_steps(const RunOptions& options, Device device, const std::function<Tensor(int64_t)>& step);

// The calls of a compiled step that captured or compiled, as the step loop saw them.
struct CaptureTimes {
  double compile_ms = 0.0;          // the first capture's call
  double segment_compile_ms = 0.0;  // --host-read: the calls that compiled segments, together
  int64_t last_compiling_call = -1;  // the last call that captured or compiled segments
  nlohmann::json calls = nlohmann::json::array();  // every capture's batch size and time
};

// The fields a compiled run adds (compile_ms, captures, executor, planned_bytes, ...), after
// checking that the run measured what it claims: no fall back to eager, no capture or compile in
// a measured step, one capture for one batch size, or compiled segments for --host-read.
nlohmann::json compiled_fields(const RunOptions& options, const graph::CompiledFunction& state,
                               const CaptureTimes& captures, int64_t batch_size_count);

}  // namespace ember::bench
