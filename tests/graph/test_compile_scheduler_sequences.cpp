// SequentialLR and ChainedScheduler stepped inside an ember::compile'd training step: every replay
// repeats the whole step (milestone restarts included), so rates and parameters follow eager ones.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "graph/compile.h"
#include "runtime/ember.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace test_compile_scheduler_sequences {

using namespace ember;

namespace {

// One parameter, SGD, a warm-up then a decay, run either as SequentialLR or as ChainedScheduler.
struct Run {
  Tensor param = full({3}, 1.0).requires_grad_();
  optim::SGD optimizer{{param}, {.lr = 0.5}};
  optim::LinearLR warmup{optimizer, 0.2, 1.0, 3};
  optim::ExponentialLR decay{optimizer, 0.8};
  std::unique_ptr<optim::SequentialLR> sequential;
  std::unique_ptr<optim::ChainedScheduler> chained;

  explicit Run(bool use_sequential) {
    if (use_sequential) {
      sequential = std::make_unique<optim::SequentialLR>(optimizer, std::vector<optim::LRScheduler*>{&warmup, &decay},
                                                         std::vector<int64_t>{3});
    } else {
      chained = std::make_unique<optim::ChainedScheduler>(optimizer, std::vector<optim::LRScheduler*>{&warmup, &decay});
    }
  }

  Tensor step(const Tensor& x) {
    optimizer.zero_grad();
    Tensor loss = (param * x).sum();
    loss.backward();
    optimizer.step();
    if (sequential) sequential->step();
    if (chained) chained->step();
    return loss;
  }
};

}  // namespace

TEST_CASE("compile: SequentialLR and ChainedScheduler steps replay like eager ones") {
  for (bool use_sequential : {true, false}) {
    CAPTURE(use_sequential);
    Run eager(use_sequential), compiled(use_sequential);
    auto train_step = ember::compile([&](const Tensor& x) { return compiled.step(x); });
    for (int call = 0; call < 10; ++call) {
      const Tensor x = full({3}, 0.1 * (call + 1));
      const double expected = eager.step(x).item();
      const double actual = train_step(x).item();
      CAPTURE(call);
      CHECK(actual == expected);
      CHECK(compiled.optimizer.get_lr(0) == eager.optimizer.get_lr(0));
      CHECK(compiled.param.to_vector<float>() == eager.param.to_vector<float>());
    }
    CHECK(train_step.state().replays() > 0);
    CHECK_FALSE(train_step.state().fell_back_to_eager());
    if (use_sequential) {
      CHECK(compiled.sequential->last_epoch() == 10);
      CHECK(compiled.sequential->get_last_lr() == eager.sequential->get_last_lr());
    } else {
      CHECK(compiled.chained->get_last_lr() == eager.chained->get_last_lr());
    }
    CHECK(compiled.decay.last_epoch() == eager.decay.last_epoch());
  }
}

TEST_CASE("compile: ReduceLROnPlateau inside a compiled step breaks the graph and counts every call") {
  Tensor param = full({2}, 1.0).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 1.0});
  optim::ReduceLROnPlateau plateau(optimizer, {.factor = 0.5, .patience = 1});
  auto train_step = ember::compile([&](const Tensor& x) {
    Tensor loss = (param * x).sum();
    plateau.step(3.0);  // never improves after the first call
    return loss;
  });
  for (int call = 0; call < 7; ++call) train_step(full({2}, 1.0));
  // Calls 1..7: best 3 at the first, bad epochs 1, 2 (halve), 1, 2 (halve), 1, 2 (halve).
  CHECK(plateau.last_epoch() == 7);
  CHECK(optimizer.get_lr(0) == 0.125);
}

}  // namespace test_compile_scheduler_sequences
