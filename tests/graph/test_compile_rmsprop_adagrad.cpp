// RMSprop, Adagrad, Adamax, NAdam, RAdam and Adadelta inside ember::compile: a compiled training
// step equals the eager one over many steps (losses, parameters, state buffers, step counts and
// rates exactly), with one capture: a learning rate changed between calls or by a scheduler stepped
// inside the compiled function is read per replay (so are step counts, bias corrections, decayed
// rates and NAdam's mu_product), never baked in; RAdam recompiles once, where its update changes
// form (rho_t > 5). Changing another hyperparameter recompiles, naming it. The update is several
// registry ops, which the graph fuses; libember and the fused code are built without FMA
// contraction, so a fused group rounds each op as eager does and the CPU step is bit for bit
// (docs/ARCHITECTURE.md, "Code generation").
#include <doctest/doctest.h>

#include "graph/compile.h"
#include "optimizer_side_by_side.h"

namespace test_compile_rmsprop_adagrad {

using namespace ember;
using ember::graph_test::Trainer;
using ember::graph_test::train_side_by_side;

TEST_CASE("compile: RMSprop training steps equal eager for every buffer combination, lr read per call") {
  for (const double momentum : {0.0, 0.9})
    for (const bool centered : {false, true})
      for (const bool lowered : {true, false}) {
        INFO("momentum ", momentum, ", centered ", centered, ", lowered ", lowered);
        train_side_by_side<optim::RMSprop>(
            {.lr = 0.01, .alpha = 0.9, .weight_decay = 0.01, .momentum = momentum, .centered = centered}, lowered);
      }
}

TEST_CASE("compile: Adagrad training steps equal eager, its step count and decayed lr read per call") {
  for (const bool lowered : {true, false}) {
    INFO("lowered ", lowered);
    train_side_by_side<optim::Adagrad>(
        {.lr = 0.05, .lr_decay = 0.1, .weight_decay = 0.01, .initial_accumulator_value = 0.1}, lowered);
  }
}

TEST_CASE("compile: Adamax, NAdam and Adadelta training steps equal eager, their step-dependent rates read per call") {
  for (const bool lowered : {true, false}) {
    INFO("lowered ", lowered);
    train_side_by_side<optim::Adamax>({.lr = 0.01, .weight_decay = 0.01}, lowered);
    for (const bool decoupled : {false, true}) {
      INFO("decoupled ", decoupled);
      train_side_by_side<optim::NAdam>({.lr = 0.01, .weight_decay = 0.01, .decoupled_weight_decay = decoupled},
                                       lowered);
    }
    train_side_by_side<optim::Adadelta>({.lr = 0.5, .weight_decay = 0.01}, lowered);
  }
}

TEST_CASE("compile: RAdam equals eager and recompiles once, when rho_t passes 5 and its update changes form") {
  for (const bool lowered : {true, false}) {
    INFO("lowered ", lowered);
    train_side_by_side<optim::RAdam>({.lr = 0.01, .weight_decay = 0.01, .decoupled_weight_decay = true}, lowered,
                                     /*recompiles=*/1);
  }
}

TEST_CASE("compile: changing RMSprop's alpha or Adagrad's lr_decay recompiles, naming the values") {
  Trainer<optim::RMSprop> rmsprop(5, {.lr = 0.01});
  auto rmsprop_step = ember::compile([&](const Tensor& x, const Tensor& y) { return rmsprop.step(x, y); });
  Trainer<optim::Adagrad> adagrad(5, {.lr = 0.01});
  auto adagrad_step = ember::compile([&](const Tensor& x, const Tensor& y) { return adagrad.step(x, y); });
  for (int step = 0; step < 5; ++step) {
    if (step == 3) {
      rmsprop.optimizer->param_groups()[0].options.alpha = 0.5;
      adagrad.optimizer->param_groups()[0].options.lr_decay = 0.5;
    }
    auto [x, y] = graph_test::batch(step, 16);
    rmsprop_step(x, y);
    adagrad_step(x, y);
  }
  REQUIRE(rmsprop_step.state().recompile_reasons().size() == 1);
  CHECK(rmsprop_step.state().recompile_reasons()[0].find("RMSprop param group 0") != std::string::npos);
  REQUIRE(adagrad_step.state().recompile_reasons().size() == 1);
  CHECK(adagrad_step.state().recompile_reasons()[0].find("Adagrad param group 0") != std::string::npos);
}

}  // namespace test_compile_rmsprop_adagrad
