// ember::compile of a training step through a bidirectional two-layer LSTM, a GRU and an
// LSTMCell: the time loops unroll into one capture (fullgraph), equal to eager step by step.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"

namespace test_compile_rnn {

using namespace ember;

namespace {

struct Sequencer {
  nn::LSTM lstm{nullptr};
  nn::GRU gru{nullptr};
  nn::LSTMCell cell{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::Adam> optimizer;

  Sequencer() {
    manual_seed(94);
    lstm = nn::LSTM(3, 4, {.num_layers = 2, .bidirectional = true});
    gru = nn::GRU(8, 5, {.batch_first = true});
    cell = nn::LSTMCell(5, 6);
    head = nn::Linear(6, 2);
    std::vector<Tensor> parameters;
    for (const nn::Module* module :
         {static_cast<const nn::Module*>(lstm.get()), static_cast<const nn::Module*>(gru.get()),
          static_cast<const nn::Module*>(cell.get()), static_cast<const nn::Module*>(head.get())})
      for (const Tensor& parameter : module->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = 0.01});
  }

  // x [T, B, 3], target [B, 2].
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor encoded = std::get<0>(lstm(x));              // [T, B, 8]
    const auto [steps, last] = gru(encoded.transpose(0, 1));  // [B, T, 5], [1, B, 5]
    const auto [h, c] = cell->forward(last.select(0, 0));     // [B, 6]
    const Tensor loss = add(mse_loss(head(h), target), mean(mul(steps, steps)));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through LSTM, GRU and LSTMCell, captured whole, equals eager") {
  Sequencer eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                   {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    manual_seed(990 + static_cast<uint64_t>(step));
    const Tensor x = randn({4, 2, 3});
    const Tensor target = randn({2, 2});
    const Tensor compiled_loss = train_step(x, target);
    const Tensor eager_loss = eager.step(x, target);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 3);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_rnn
