// A replay that raises leaves the state eager execution leaves: host effects fn ran before the
// failing op (an LR scheduler stepped before the loss) happen, and so do the .grad write-backs of
// gradients computed before it (a metric failing after the optimizer step), so a training loop
// that catches the error and goes on stays bit for bit with eager.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>

#include "graph/compile.h"
#include "graph_test_util.h"
#include "runtime/optim/lr_scheduler.h"

namespace test_compile_replay_errors {

using namespace ember;
using graph_test::bit_equal;

namespace {

struct Net {
  nn::Sequential layers;
  std::unique_ptr<optim::Adam> optimizer;
  std::unique_ptr<optim::StepLR> scheduler;
  Net() {
    manual_seed(5);
    layers = nn::Sequential(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 3));
    optimizer = std::make_unique<optim::Adam>(layers->parameters(), optim::AdamOptions{.lr = 0.01});
    scheduler = std::make_unique<optim::StepLR>(*optimizer, 1, 0.9);
  }
  // The scheduler steps between the forward and the loss, which raises for a bad target.
  Tensor step_scheduled_before_loss(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    const Tensor out = layers->forward(x);
    scheduler->step();
    Tensor loss = nn::functional::cross_entropy(out, y);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
  // A metric after the step raises for a bad index: the step and its gradients happened.
  Tensor step_then_metric(const Tensor& x, const Tensor& y, const Tensor& index) {
    optimizer->zero_grad();
    const Tensor out = layers->forward(x);
    Tensor loss = nn::functional::cross_entropy(out, y);
    loss.backward();
    optimizer->step();
    return sum(gather(out.detach(), 1, index.unsqueeze(1)));
  }
};

void check_same_state(Net& compiled, Net& eager) {
  CHECK(compiled.optimizer->get_lr(0) == eager.optimizer->get_lr(0));
  const std::vector<Tensor> got = compiled.layers->parameters(), want = eager.layers->parameters();
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("parameter ", i);
    CHECK(bit_equal(got[i], want[i]));
    REQUIRE(got[i].grad().defined() == want[i].grad().defined());
    if (want[i].grad().defined()) CHECK(bit_equal(got[i].grad(), want[i].grad()));
  }
}

std::pair<Tensor, Tensor> batch(int call) {
  manual_seed(100 + static_cast<uint64_t>(call));
  return {randn({8, 6}), randint(0, 3, {8})};
}

// Runs `run`, returning the error's message ("" when it returned).
template <typename Run>
std::string error_of(Run&& run) {
  try {
    run();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("compile: a replay raising in the loss still steps the scheduler that ran before it, as eager") {
  for (const bool lowered : {true, false}) {
    const std::string executor = lowered ? "lowered executor" : "dispatching executor";
    INFO(executor);
    Net eager, compiled;
    auto step = ember::compile(
        [&](const Tensor& x, const Tensor& y) { return compiled.step_scheduled_before_loss(x, y); },
        {.fullgraph = true, .lowered = lowered});
    for (int call = 0; call < 7; ++call) {
      INFO("call ", call);
      auto [x, y] = batch(call);
      if (call == 4) y = full({8}, 9.0, {.dtype = kInt64});  // out of range for 3 classes
      Tensor actual, expected;
      const std::string compiled_error = error_of([&] { actual = step(x, y); });
      const std::string eager_error = error_of([&] { expected = eager.step_scheduled_before_loss(x, y); });
      CHECK((compiled_error.empty() == eager_error.empty()));
      if (call == 4) CHECK(compiled_error.find("(replayed by a compiled graph)") != std::string::npos);
      if (expected.defined()) CHECK(bit_equal(actual, expected));
      check_same_state(compiled, eager);
    }
    CHECK(step.state().replays() >= 4);
  }
}

TEST_CASE("compile: a replay raising after the optimizer step keeps that step's gradients, as eager") {
  for (const bool lowered : {true, false}) {
    const std::string executor = lowered ? "lowered executor" : "dispatching executor";
    INFO(executor);
    Net eager, compiled;
    auto step = ember::compile([&](const Tensor& x, const Tensor& y,
                                   const Tensor& index) { return compiled.step_then_metric(x, y, index); },
                               {.fullgraph = true, .lowered = lowered});
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      const auto [x, y] = batch(call);
      const Tensor index = call == 3 ? full({8}, 9.0, {.dtype = kInt64}) : y;
      Tensor actual, expected;
      const std::string compiled_error = error_of([&] { actual = step(x, y, index); });
      const std::string eager_error = error_of([&] { expected = eager.step_then_metric(x, y, index); });
      CHECK((compiled_error.empty() == eager_error.empty()));
      if (expected.defined()) CHECK(bit_equal(actual, expected));
      check_same_state(compiled, eager);
    }
    CHECK(step.state().replays() >= 3);
  }
}

}  // namespace test_compile_replay_errors
