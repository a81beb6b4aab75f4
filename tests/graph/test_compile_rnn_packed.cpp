// ember::compile of a training step through packed sequences (pack_padded_sequence with unsorted
// lengths, a bidirectional two-layer LSTM with proj_size and a GRU on the PackedSequence,
// pad_packed_sequence), equal to eager step by step. The modules and pad_packed_sequence read
// batch_sizes on the host (host metadata, as in PyTorch), a graph break each: the step runs as
// compiled segments, not as one capture.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"

namespace test_compile_rnn_packed {

using namespace ember;
namespace rnn_utils = ember::nn::utils::rnn;

namespace {

struct PackedModel {
  nn::LSTM lstm{nullptr};
  nn::GRU gru{nullptr};
  std::unique_ptr<optim::Adam> optimizer;
  const std::vector<int64_t> lengths{3, 5, 1, 4};

  PackedModel() {
    manual_seed(95);
    lstm = nn::LSTM(3, 5, {.num_layers = 2, .bidirectional = true, .proj_size = 2});
    gru = nn::GRU(4, 3);
    std::vector<Tensor> parameters = lstm->parameters();
    for (const Tensor& parameter : gru->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = 0.01});
  }

  // x [5, 4, 3] padded, h0 [4, 4, 2] in the batch's order.
  Tensor step(const Tensor& x, const Tensor& h0) {
    optimizer->zero_grad();
    const rnn_utils::PackedSequence packed = rnn_utils::pack_padded_sequence(x, lengths, false, false);
    const auto [encoded, lstm_states] = lstm->forward(packed, std::tuple{h0, zeros({4, 4, 5})});
    const auto [decoded, h_n] = gru->forward(encoded);
    const Tensor padded = std::get<0>(rnn_utils::pad_packed_sequence(decoded, false, 0.0, 6));
    const Tensor loss = add(mean(mul(padded, padded)), mean(mul(h_n, std::get<1>(lstm_states).narrow(2, 0, 3))));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through packed LSTM and GRU, run as compiled segments, equals eager") {
  PackedModel eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& h0) { return compiled.step(x, h0); }, {});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    manual_seed(1990 + static_cast<uint64_t>(step));
    const Tensor x = randn({5, 4, 3});
    const Tensor h0 = randn({4, 4, 2});
    const Tensor compiled_loss = train_step(x, h0);
    const Tensor eager_loss = eager.step(x, h0);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  // The host read of batch_sizes ([5] int64) broke the capture; the later calls ran as segments.
  const std::vector<std::string>& breaks = train_step.state().graph_breaks();
  REQUIRE(!breaks.empty());
  CHECK(breaks[0].find("to_vector() reads the values of a [5] int64 tensor") != std::string::npos);
  CHECK(train_step.state().segmented_calls() > 0);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_rnn_packed
