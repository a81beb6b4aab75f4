// `--micro many_parameters`: what the compile stage's own bookkeeping costs per parameter, at
// model sizes well past the reference MLPs' six parameters. Each parameter is a [4] tensor, so
// the kernels cost next to nothing and the figures are the guards, write-backs and executor:
//   full_step  zero_grad, a loss summing (p_i * x).sum() over all parameters, backward, Adam step
//   step_alone the Adam step compiled alone, backward() outside it: every .grad is a graph input
// For each count: the capture's wall time (first compiled call, kernels from the disk cache after
// the first count) and the replay's median. A cost linear in the parameters keeps us_per_param
// flat across counts; anything quadratic grows it with the count.
#include <chrono>

#include "graph/compile.h"
#include "tools/ember-bench/bench.h"

namespace ember::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

nlohmann::json measure(int64_t count, bool step_alone, int replays) {
  std::vector<Tensor> parameters;
  for (int64_t i = 0; i < count; ++i) parameters.push_back(randn({4}, {.device = kCPU}).requires_grad_());
  optim::Adam optimizer(parameters, optim::AdamOptions{.lr = 1e-3});
  const Tensor x = randn({4}, {.device = kCPU});
  auto loss_of = [&] {
    Tensor loss = (parameters[0] * x).sum();
    for (size_t i = 1; i < parameters.size(); ++i) loss = loss + (parameters[i] * x).sum();
    return loss;
  };
  auto step = [&](const Tensor& input) {
    if (step_alone) {
      optimizer.step();
      return input;
    }
    optimizer.zero_grad();
    Tensor loss = loss_of();
    loss.backward();
    optimizer.step();
    return loss;
  };
  auto compiled = ember::compile(step, {.fullgraph = true});
  auto prepare = [&] {  // step_alone: fresh gradients from an eager backward, outside the timing
    if (!step_alone) return;
    optimizer.zero_grad();
    loss_of().backward();
  };
  prepare();
  (void)compiled(x);  // the first call runs eagerly
  prepare();
  const Clock::time_point capture_start = Clock::now();
  (void)compiled(x);
  const double capture_ms = seconds_since(capture_start) * 1e3;
  StepTimes replays_us;
  for (int i = 0; i < replays; ++i) {
    prepare();
    const Clock::time_point start = Clock::now();
    (void)compiled(x);
    replays_us.step_us.push_back(seconds_since(start) * 1e6);
  }
  return {{"parameters", count},
          {"variant", step_alone ? "step_alone" : "full_step"},
          {"capture_ms", capture_ms},
          {"replay_us_median", replays_us.median()},
          {"replay_us_per_parameter", replays_us.median() / static_cast<double>(count)},
          {"captures_made", compiled.state().captures_made()},
          {"replays", compiled.state().replays()}};
}

}  // namespace

nlohmann::json run_many_parameters(const RunOptions& options) {
  set_num_threads(options.threads);
  nlohmann::json rows = nlohmann::json::array();
  for (const int64_t count : {int64_t{100}, int64_t{400}, int64_t{1600}})
    for (const bool step_alone : {false, true}) rows.push_back(measure(count, step_alone, options.steps));
  return {{"benchmark", "many_parameters"}, {"threads", options.threads}, {"replays", options.steps}, {"rows", rows}};
}

}  // namespace ember::bench
