// nn::MultiheadAttention and the recurrent modules under ember::compile: the training flag their
// forwards read (dropout on the attention weights, between recurrent layers) is guarded like
// nn::Dropout's, so eval() after a capture in train mode recompiles.
#include <doctest/doctest.h>

#include <tuple>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"

namespace test_compile_training_mode_attention_rnn {

using namespace ember;

// MultiheadAttentionImpl::forward (attention.cpp) reads is_training() directly to choose
// dropout_p, where nn::Dropout and BatchNorm read nn::training_for_forward, which adds the host
// guard that makes eval() after a capture in train mode recompile (runtime/nn/training_guard.h
// says why: "as PyTorch's compile guards on module.training"; torch.compile installs guards on
// the `training` attribute of every nn.Module whose forward it traces). Without the guard the
// graph captured in train mode replays after eval(): the attention weights are still dropped.
TEST_CASE("compile: MultiheadAttention with dropout switched to eval recompiles") {
  NoGradGuard no_grad;
  manual_seed(3);
  nn::MultiheadAttention attention(8, 2, {.dropout = 0.5});
  const Tensor x = graph_test::seeded_randn({5, 2, 8}, 31);
  auto attend = ember::compile(
      [&](const Tensor& input) {
        return std::get<0>(attention->forward(input, input, input, {.need_weights = false}));
      },
      {.fullgraph = true});
  for (int call = 0; call < 3; ++call) attend(x);  // warm-up, capture in train mode, replay
  attention->eval();
  const Tensor expected = std::get<0>(attention->forward(x, x, x, {.need_weights = false}));  // eager, no dropout
  CHECK(graph_test::max_relative_error(attend(x), expected) <= 1e-6);
  CHECK(attend.state().recompile_reasons().size() == 1);
}

TEST_CASE("compile: an LSTM with dropout between layers switched to eval recompiles") {
  NoGradGuard no_grad;
  manual_seed(4);
  nn::LSTM lstm(3, 4, {.num_layers = 2, .dropout = 0.5});
  const Tensor x = graph_test::seeded_randn({5, 2, 3}, 32);
  auto run = ember::compile([&](const Tensor& input) { return std::get<0>(lstm(input)); }, {.fullgraph = true});
  for (int call = 0; call < 3; ++call) run(x);  // warm-up, capture in train mode, replay
  lstm->eval();
  const Tensor expected = std::get<0>(lstm(x));  // eager, no dropout
  CHECK(graph_test::max_relative_error(run(x), expected) <= 1e-6);
  CHECK(run.state().recompile_reasons().size() == 1);
}

}  // namespace test_compile_training_mode_attention_rnn
