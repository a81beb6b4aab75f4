// LR schedulers stepped inside a compiled training step: scheduler.step() is a host effect that
// every replay repeats where it was captured, so per-iteration schedules train exactly as in eager
// mode (losses, parameters, optimizer state and the learning-rate sequence, bit for bit) with one
// capture and no recompiles, whether the scheduler steps before or after the optimizer.
#include <doctest/doctest.h>

#include "graph/capture.h"
#include "graph/compile.h"
#include "graph/ir.h"
#include "graph_test_util.h"

namespace test_compile_schedulers {

using namespace ember;
using graph_test::SeedMlp;

namespace {

// A seed MLP with a scheduler on its optimizer, stepped after (or before) optimizer->step().
struct ScheduledMlp {
  SeedMlp mlp;
  std::unique_ptr<optim::LRScheduler> scheduler;
  bool schedule_first = false;

  ScheduledMlp(std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)> make, bool first)
      : mlp(3), scheduler(make(*mlp.optimizer)), schedule_first(first) {}
  Tensor step(const Tensor& x, const Tensor& y) {
    mlp.optimizer->zero_grad();
    Tensor loss = nn::functional::cross_entropy(mlp.model->forward(x), y);
    loss.backward();
    if (schedule_first) scheduler->step();
    mlp.optimizer->step();
    if (!schedule_first) scheduler->step();
    return loss;
  }
};

void check_same_training(ScheduledMlp& eager, ScheduledMlp& compiled) {
  const std::vector<Tensor> expected = eager.mlp.model->parameters();
  const std::vector<Tensor> actual = compiled.mlp.model->parameters();
  REQUIRE(expected.size() == actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(graph_test::bit_equal(expected[i], actual[i]));
    const auto* eager_state = eager.mlp.optimizer->state(expected[i]);
    const auto* compiled_state = compiled.mlp.optimizer->state(actual[i]);
    REQUIRE(eager_state != nullptr);
    REQUIRE(compiled_state != nullptr);
    CHECK(eager_state->step == compiled_state->step);
    CHECK(graph_test::bit_equal(eager_state->exp_avg_sq, compiled_state->exp_avg_sq));
  }
  CHECK(compiled.scheduler->last_epoch() == eager.scheduler->last_epoch());
  CHECK(compiled.scheduler->get_last_lr() == eager.scheduler->get_last_lr());
  CHECK(compiled.mlp.optimizer->get_lr(0) == eager.mlp.optimizer->get_lr(0));
}

using MakeScheduler = std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)>;

void train_side_by_side(const MakeScheduler& make, bool schedule_first, bool lowered) {
  ScheduledMlp eager(make, schedule_first), compiled(make, schedule_first);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .lowered = lowered});
  double first_lr = eager.mlp.optimizer->get_lr(0);
  for (int step = 0; step < 24; ++step) {
    auto [x, y] = graph_test::batch(step);
    const Tensor expected = eager.step(x, y);
    const Tensor actual = train_step(x, y);
    INFO("step ", step);
    CHECK(graph_test::bit_equal(expected, actual));
    CHECK(compiled.mlp.optimizer->get_lr(0) == eager.mlp.optimizer->get_lr(0));
  }
  CHECK(train_step.state().captures() == 1);
  CHECK(train_step.state().replays() == 22);
  CHECK(train_step.state().recompile_reasons().empty());
  check_same_training(eager, compiled);
  // The schedule moved the rate: replays did run the scheduler.
  CHECK(eager.mlp.optimizer->get_lr(0) != first_lr);
  CHECK(eager.scheduler->last_epoch() == 24);
}

}  // namespace

TEST_CASE("compile: schedulers stepped inside the compiled function equal eager, after or before the optimizer") {
  const std::vector<std::pair<const char*, MakeScheduler>> schedulers = {
      {"StepLR", [](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 5, 0.5); }},
      {"CosineAnnealingLR", [](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 10, 1e-5); }},
      {"LinearLR", [](optim::Optimizer& o) { return std::make_unique<optim::LinearLR>(o, 0.1, 1.0, 8); }},
      {"LambdaLR", [](optim::Optimizer& o) {
         return std::make_unique<optim::LambdaLR>(o, [](int64_t epoch) { return 1.0 / (1.0 + 0.3 * epoch); });
       }}};
  for (const auto& [name, make] : schedulers)
    for (bool first : {false, true})
      for (bool lowered : {true, false}) {
        INFO(name, first ? ", stepped before the optimizer" : ", stepped after the optimizer",
             lowered ? ", lowered executor" : ", dispatching executor");
        train_side_by_side(make, first, lowered);
      }
}

TEST_CASE("compile: the graph dump shows where a replay repeats the scheduler's step") {
  for (bool first : {false, true}) {
    ScheduledMlp compiled([](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 5, 0.5); }, first);
    auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                     {.fullgraph = true, .warmup_calls = 1});
    for (int step = 0; step < 2; ++step) {
      auto [x, y] = graph_test::batch(step);
      train_step(x, y);
    }
    const graph::Graph* graph = train_step.state().graph();
    REQUIRE(graph != nullptr);
    const std::string text = graph::to_text(*graph);
    const size_t effect = text.find("host_effect(StepLR.step())");
    const size_t adam = text.find("adam_step_");
    INFO(text);
    REQUIRE(effect != std::string::npos);
    REQUIRE(adam != std::string::npos);
    CHECK((effect < adam) == first);
    CHECK(graph->final_effects.size() == (first ? 0u : 1u));
    CHECK(graph::to_dot(*graph).find("host_effect(StepLR.step())\", shape=note") != std::string::npos);
  }
}

TEST_CASE("compile: a replaced scheduler recompiles instead of replaying the dead one") {
  auto make = [](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 2, 0.5); };
  ScheduledMlp eager(make, false), compiled(make, false);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true});
  for (int step = 0; step < 8; ++step) {
    if (step == 5)
      for (ScheduledMlp* side : {&eager, &compiled}) {
        side->scheduler.reset();  // the old one's replay would touch freed memory
        side->scheduler = std::make_unique<optim::StepLR>(*side->mlp.optimizer, 3, 0.1);
      }
    auto [x, y] = graph_test::batch(step);
    INFO("step ", step);
    CHECK(graph_test::bit_equal(eager.step(x, y), train_step(x, y)));
  }
  REQUIRE(train_step.state().recompile_reasons().size() == 1);
  CHECK(train_step.state().recompile_reasons()[0].find("StepLR alive") != std::string::npos);
  check_same_training(eager, compiled);
}

TEST_CASE("compile: an op dispatched inside a scheduler's step is a graph break") {
  // The replay calls step() again, so an op it dispatched would be both in the graph and rerun.
  SeedMlp strict(3);
  optim::LambdaLR scheduler(*strict.optimizer, [](int64_t epoch) {
    return (ones({2}) * static_cast<double>(epoch + 1)).sum().item() / 2.0;
  });
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) {
    Tensor loss = strict.step(x, y);
    scheduler.step();
    return loss;
  }, {.fullgraph = true, .warmup_calls = 0});
  auto [x, y] = graph_test::batch(0);
  CHECK_THROWS_WITH_AS(train_step(x, y), doctest::Contains("dispatched inside a host effect"), graph::GraphBreak);
}

TEST_CASE("compile: set_lr called directly inside the compiled function still breaks the graph") {
  // Unlike a scheduler, user code setting the rate cannot be repeated by a replay.
  SeedMlp strict(3);
  optim::StepLR scheduler(*strict.optimizer, 2, 0.5);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) {
    scheduler.step();  // allowed: a host effect
    strict.optimizer->set_lr(0, 1e-4);
    return strict.step(x, y);
  }, {.fullgraph = true, .warmup_calls = 0});
  auto [x, y] = graph_test::batch(0);
  CHECK_THROWS_WITH_AS(train_step(x, y), doctest::Contains("Adam.set_lr(0, 0.0001) changes host state"),
                       graph::GraphBreak);
}

TEST_CASE("compile: a scheduler stepped between two optimizers' steps replays between them") {
  // The effect is replayed inside the batched run of the two optimizers' Adam steps: before the
  // second optimizer's first refresh, after the first one's.
  struct TwoOptimizers {
    nn::Sequential model;
    std::unique_ptr<optim::Adam> first, second;
    std::unique_ptr<optim::StepLR> scheduler;
    TwoOptimizers() {
      manual_seed(11);
      model = nn::Sequential(nn::Linear(100, 64), nn::ReLU(), nn::Linear(64, 10));
      const std::vector<Tensor> params = model->parameters();
      first = std::make_unique<optim::Adam>(std::vector<Tensor>{params[0], params[1]}, optim::AdamOptions{.lr = 2e-3});
      second = std::make_unique<optim::Adam>(std::vector<Tensor>{params[2], params[3]}, optim::AdamOptions{.lr = 2e-3});
      scheduler = std::make_unique<optim::StepLR>(*second, 2, 0.5);
    }
    Tensor step(const Tensor& x, const Tensor& y) {
      first->zero_grad();
      second->zero_grad();
      Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      first->step();
      scheduler->step();
      second->step();
      return loss;
    }
  };
  TwoOptimizers eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true});
  for (int step = 0; step < 10; ++step) {
    auto [x, y] = graph_test::batch(step);
    INFO("step ", step);
    CHECK(graph_test::bit_equal(eager.step(x, y), train_step(x, y)));
    CHECK(compiled.second->get_lr(0) == eager.second->get_lr(0));
  }
  CHECK(train_step.state().captures() == 1);
  CHECK(compiled.first->get_lr(0) == 2e-3);  // the scheduler touches the second optimizer only
  CHECK(eager.second->get_lr(0) < 2e-3 / 8);
  const std::vector<Tensor> expected = eager.model->parameters(), actual = compiled.model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) CHECK(graph_test::bit_equal(expected[i], actual[i]));
}

}  // namespace test_compile_schedulers
