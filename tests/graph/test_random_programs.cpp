// Random training steps through ember::compile against eager. The generator (tests/random_program.h)
// writes small programs over broadcasting shapes ([4,6], [1,6], [4,1], [6], [1]): pointwise chains,
// keepdim reductions, GEMMs on transposed views, dropout, and in-place updates of intermediates; each step
// then runs backward and an update by SGD with momentum or AdamW. Every pass, fusion (for every other
// program also with every dim dynamic), the memory plan and the lowered executor see graphs nobody wrote
// by hand, and the results must equal eager's: the loss at every call, the final parameters, their
// gradients and the optimizer's state.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../random_program.h"
#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph/fusion.h"
#include "graph/segments.h"
#include "runtime/ember.h"
#include "skip_case.h"

namespace test_random_programs {

using namespace ember;
using ember::testing::Program;
using ember::testing::random_program;

namespace {

// One model: its parameters, optimizer (SGD with momentum, or AdamW) and the program's step.
struct Model {
  Tensor p, q, w;
  std::unique_ptr<optim::SGD> sgd;
  std::unique_ptr<optim::AdamW> adamw;
  optim::Optimizer* optimizer = nullptr;

  explicit Model(bool use_adamw, Device device = kCPU) {
    manual_seed(7);
    p = randn({6}, {.device = device}).requires_grad_();
    q = randn({4, 6}, {.device = device}).requires_grad_();
    w = mul(randn({6, 6}, {.device = device}), 0.4).detach().requires_grad_();
    std::vector<Tensor> parameters{p, q, w};
    if (use_adamw) {
      adamw = std::make_unique<optim::AdamW>(parameters, optim::AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
      optimizer = adamw.get();
    } else {
      sgd = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
      optimizer = sgd.get();
    }
  }

  // The optimizer's per-parameter state tensors (momentum buffer, or AdamW's two moments).
  std::vector<Tensor> state_of(const Tensor& parameter) const {
    if (sgd) return {sgd->state(parameter)->momentum_buffer};
    return {adamw->state(parameter)->exp_avg, adamw->state(parameter)->exp_avg_sq};
  }

  // The caller's side of a step whose loss comes from a compiled forward (or the same eager one).
  template <typename Loss>
  Tensor step_with(Loss& loss_of, const Tensor& x) {
    optimizer->zero_grad();
    Tensor loss = loss_of(x);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }

  // With `host_reads` (program_loss), the program reads values on the host, and the step reads
  // the loss before the optimizer step as well.
  Tensor step(const Program& program, const Tensor& x, const std::vector<bool>* host_reads = nullptr) {
    optimizer->zero_grad();
    Tensor loss = ember::testing::program_loss(program, x, p, q, w, host_reads);
    loss.backward();
    if (host_reads != nullptr && loss.item() > 1e6) return loss;  // never taken, but read
    optimizer->step();
    return loss;
  }
};

void check_close(const Tensor& actual, const Tensor& expected, const std::string& what = "result") {
  INFO(what);
  REQUIRE(actual.defined());
  REQUIRE(expected.defined());
  const double error = graph_test::max_relative_error(actual, expected);
  CHECK(std::isfinite(error));
  CHECK(error <= 1e-5);
}

void check_same_state(Model& compiled, Model& eager) {
  const std::vector<std::pair<Tensor, Tensor>> pairs{{compiled.p, eager.p}, {compiled.q, eager.q},
                                                     {compiled.w, eager.w}};
  const std::string names[] = {"p", "q", "W"};
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [actual, expected] = pairs[i];
    INFO("parameter ", names[i]);
    check_close(actual, expected, "value");
    check_close(actual.grad(), expected.grad(), "grad");
    const std::vector<Tensor> actual_state = compiled.state_of(actual);
    const std::vector<Tensor> expected_state = eager.state_of(expected);
    for (size_t k = 0; k < actual_state.size(); ++k) check_close(actual_state[k], expected_state[k], "optimizer state");
  }
}

// EMBER_RANDOM_PROGRAMS=N and EMBER_RANDOM_SEED=S run a longer campaign on other programs (CI
// runs the default 24 from the fixed seed).
int env_or(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

}  // namespace

namespace {

// Every program's training step compiled three ways (fused, fused with every dim dynamic, plain
// replay), each against eager on `device`.
void compiled_training_steps_equal_eager(Device device) {
  const int kPrograms = env_or("EMBER_RANDOM_PROGRAMS", 24);
  constexpr int kCalls = 4;  // one eager warm-up, the capture, two replays
  std::mt19937 rng(static_cast<unsigned>(env_or("EMBER_RANDOM_SEED", 20261202)));
  int programs_with_fusion = 0, dynamic_programs_with_fusion = 0, dynamic_groups = 0;
  for (int index = 0; index < kPrograms; ++index) {
    const Program program = random_program(rng, 14);
    INFO("program ", index, ":\n", program.describe());
    const bool use_adamw = index % 2 == 1;
    INFO("optimizer ", use_adamw ? "AdamW" : "SGD with momentum");
    Model eager(use_adamw, device), fused(use_adamw, device), plain(use_adamw, device), dynamic(use_adamw, device);
    auto fused_step = ember::compile([&](const Tensor& x) { return fused.step(program, x); },
                                     {.fullgraph = true});
    // Every input dim dynamic: the fused kernels read the sizes 4 and 6 at run time. Every other
    // program only: each is one more compile of its kernels.
    const bool with_dynamic = index % 2 == 0;
    auto dynamic_step = ember::compile([&](const Tensor& x) { return dynamic.step(program, x); },
                                       {.fullgraph = true, .dynamic = true});
    auto plain_step = ember::compile([&](const Tensor& x) { return plain.step(program, x); },
                                     {.fullgraph = true, .fuse = false, .lowered = false});
    for (int call = 0; call < kCalls; ++call) {
      manual_seed(300 + static_cast<uint64_t>(call));
      const Tensor x = randn({4, 6}, {.device = device});
      INFO("call ", call);
      // Dropout masks come from the device's generator: each run starts where the eager one did.
      Generator& generator = default_generator(device);
      const GeneratorState start = generator.get_state();
      const Tensor expected = eager.step(program, x);
      generator.set_state(start);
      check_close(fused_step(x), expected);
      generator.set_state(start);
      check_close(plain_step(x), expected);
      if (!with_dynamic) continue;
      generator.set_state(start);
      check_close(dynamic_step(x), expected);
    }
    CHECK(fused_step.state().replays() == kCalls - 2);
    CHECK(plain_step.state().replays() == kCalls - 2);
    check_same_state(fused, eager);
    check_same_state(plain, eager);
    const bool fused_any = !graph::fused_ops(*fused_step.state().graph()).empty();
    if (fused_any) ++programs_with_fusion;
    if (with_dynamic) {
      CHECK(dynamic_step.state().replays() == kCalls - 2);
      check_same_state(dynamic, eager);
      for (const graph::FusedOpDef* op : graph::fused_ops(*dynamic_step.state().graph()))
        dynamic_groups += op->group.dynamic_dims != 0 ? 1 : 0;
      if (fused_any) ++dynamic_programs_with_fusion;
    }
  }
  // The generator is meant to exercise fusion: most programs must have produced fused kernels.
  CHECK(programs_with_fusion >= kPrograms * 3 / 4);
  CHECK(dynamic_groups >= dynamic_programs_with_fusion);
}

}  // namespace

TEST_CASE("random programs: compiled training steps (fused and plain replay) equal eager") {
  compiled_training_steps_equal_eager(kCPU);
}

#ifdef EMBER_HAS_CUDA
// The same programs on a GPU: the fused groups become generated CUDA kernels (NVRTC), the dynamic
// ones read their sizes there, and dropout draws from the GPU's generator.
TEST_CASE("cuda random programs: compiled training steps (fused and plain replay) equal eager on cuda") {
  if (!ember::testing::cuda_or_skip()) return;
  compiled_training_steps_equal_eager(Device{DeviceType::CUDA, 0});
}
#endif

TEST_CASE("random programs: steps that read values on the host run as compiled segments and equal eager") {
  // Each program reads a few of its values on the host (and branches on them): without fullgraph
  // the compiled step runs as segments split at those reads (graph/segments.h). Compiled twice:
  // with every segment compiled, and by default, where on the CPU these small segments do not pay
  // and their places in the step run eagerly (graph/segment_cost.h).
  const int kPrograms = env_or("EMBER_RANDOM_PROGRAMS", 12);
  constexpr int kCalls = 5;  // one eager warm-up, the capture that breaks, three calls as segments
  std::mt19937 rng(static_cast<unsigned>(env_or("EMBER_RANDOM_SEED", 20261202) + 2));
  int compiled_runs = 0;
  for (int index = 0; index < kPrograms; ++index) {
    const Program program = random_program(rng, 14);
    std::vector<bool> host_reads(program.instructions.size());
    std::bernoulli_distribution read(0.2);
    for (size_t i = 0; i < host_reads.size(); ++i) host_reads[i] = read(rng);
    std::string reads;
    for (size_t i = 0; i < host_reads.size(); ++i)
      if (host_reads[i]) reads += " v" + std::to_string(i + 3);
    INFO("program ", index, ":\n", program.describe(), "host reads after:", reads);
    const bool use_adamw = index % 2 == 1;
    Model eager(use_adamw), segmented(use_adamw), by_cost(use_adamw);
    auto segmented_step = ember::compile([&](const Tensor& x) { return segmented.step(program, x, &host_reads); },
                                         {.compile_every_segment = true});
    auto by_cost_step = ember::compile([&](const Tensor& x) { return by_cost.step(program, x, &host_reads); });
    for (int call = 0; call < kCalls; ++call) {
      manual_seed(300 + static_cast<uint64_t>(call));
      const Tensor x = randn({4, 6});
      INFO("call ", call);
      const GeneratorState start = default_generator().get_state();
      const Tensor expected = eager.step(program, x, &host_reads);
      default_generator().set_state(start);
      check_close(segmented_step(x), expected);
      default_generator().set_state(start);
      check_close(by_cost_step(x), expected);
    }
    REQUIRE(segmented_step.state().segments() != nullptr);
    CHECK(segmented_step.state().segmented_calls() == kCalls - 2);
    compiled_runs += segmented_step.state().segments()->compiled_runs();
    check_same_state(segmented, eager);
    // By default nothing here pays on the CPU: each place ran kernel by kernel once, when it was
    // found not to, and eagerly since.
    REQUIRE(by_cost_step.state().segments() != nullptr);
    const graph::SegmentCache& by_cost_segments = *by_cost_step.state().segments();
    CHECK(by_cost_segments.segments() == 0);
    CHECK(by_cost_segments.kernel_runs() == static_cast<int>(by_cost_segments.eager_places().size()));
    check_same_state(by_cost, eager);
  }
  CHECK(compiled_runs >= kPrograms * (kCalls - 2));  // at least one compiled segment per call
}

TEST_CASE("random programs: compiled forwards, backward() by the caller, equal eager") {
  // Only the loss is compiled (graph/compiled_autograd.h): the backward graph is captured from
  // the program's autograd history and runs when the caller's backward() reaches it; the input
  // requires grad too, so gradients also leave through a graph input.
  const int kPrograms = env_or("EMBER_RANDOM_PROGRAMS", 8);
  constexpr int kCalls = 4;
  std::mt19937 rng(static_cast<unsigned>(env_or("EMBER_RANDOM_SEED", 20261202) + 1));
  for (int index = 0; index < kPrograms; ++index) {
    const Program program = random_program(rng, 12);
    INFO("program ", index, ":\n", program.describe());
    const bool use_adamw = index % 2 == 1;
    Model eager(use_adamw), compiled(use_adamw);
    auto eager_loss = [&](const Tensor& x) { return ember::testing::program_loss(program, x, eager.p, eager.q, eager.w); };
    auto compiled_loss = ember::compile(
        [&](const Tensor& x) { return ember::testing::program_loss(program, x, compiled.p, compiled.q, compiled.w); },
        {.fullgraph = true});
    for (int call = 0; call < kCalls; ++call) {
      manual_seed(300 + static_cast<uint64_t>(call));
      const Tensor x = randn({4, 6});
      Tensor x_eager = x.clone().requires_grad_(), x_compiled = x.clone().requires_grad_();
      INFO("call ", call);
      const GeneratorState start = default_generator().get_state();
      const Tensor expected = eager.step_with(eager_loss, x_eager);
      default_generator().set_state(start);
      check_close(compiled.step_with(compiled_loss, x_compiled), expected);
      REQUIRE(x_compiled.grad().defined() == x_eager.grad().defined());  // x may not reach the loss
      if (x_eager.grad().defined()) check_close(x_compiled.grad(), x_eager.grad(), "input grad");
    }
    CHECK(compiled_loss.state().replays() == kCalls - 2);
    REQUIRE(compiled_loss.state().backward_executor() != nullptr);
    check_same_state(compiled, eager);
  }
}

}  // namespace test_random_programs
