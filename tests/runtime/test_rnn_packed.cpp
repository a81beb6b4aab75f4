// nn::RNN, LSTM and GRU on a PackedSequence (runtime/nn/modules/rnn.h, rnn_layers.cpp) against the
// definitive reference: each sequence run alone, unpacked, through the same module. Outputs, final
// states and the gradients of the input, the initial states and every parameter must agree, for
// unsorted random lengths (enforce_sorted=false) and sorted ones, both directions, two layers,
// batch_first and proj_size; then finite differences through the packed path, and the errors.
#include <doctest/doctest.h>

#include <type_traits>

#include "error_of.h"
#include "numeric_check.h"
#include "runtime/autocast.h"
#include "runtime/nn/nn.h"

namespace test_rnn_packed {

using namespace ember;
using namespace ember::testing;
using nn::utils::rnn::PackedSequence;

namespace {

using Values = std::vector<double>;

// The module's forward on a packed batch or a padded tensor, its states as a vector ({h} or {h, c}).
template <typename Impl, typename Input>
auto call(Impl& module, const Input& input, const std::vector<Tensor>& states) {
  if constexpr (std::is_same_v<Impl, nn::LSTMImpl>) {
    auto [output, final_states] = module.forward(input, std::tuple{states[0], states[1]});
    return std::pair{output, std::vector<Tensor>{std::get<0>(final_states), std::get<1>(final_states)}};
  } else {
    auto [output, h_n] = module.forward(input, states[0]);
    return std::pair{output, std::vector<Tensor>{h_n}};
  }
}

// The gradients of every parameter, then of `leaves`, as host values; the module's are cleared.
std::vector<Values> take_gradients(nn::Module& module, const std::vector<Tensor>& leaves) {
  std::vector<Values> gradients;
  for (const Tensor& parameter : module.parameters()) gradients.push_back(values_of(parameter.grad()));
  for (const Tensor& leaf : leaves) gradients.push_back(values_of(leaf.grad()));
  module.zero_grad();
  return gradients;
}

std::vector<int64_t> integers(const Tensor& t) { return t.to_vector<int64_t>(); }

Tensor weighted_sum(const Tensor& t, const Tensor& weights) { return mul(t, weights).sum(); }

// Packs a random padded batch of `lengths` (padded to `steps`), runs it packed, then runs each
// sequence alone from its own initial states, and compares everything, gradients included.
template <typename Impl>
void check_against_single_sequences(Impl& module, const std::vector<int64_t>& lengths, int64_t steps,
                                    bool enforce_sorted, uint32_t seed) {
  const bool batch_first = module.options().batch_first, lstm = std::is_same_v<Impl, nn::LSTMImpl>;
  const int64_t N = static_cast<int64_t>(lengths.size()), in = module.input_size();
  const int64_t states = module.options().num_layers * module.num_directions();
  const int time_dim = batch_first ? 1 : 0, batch_dim = 1 - time_dim;
  const Tensor x = random_tensor(batch_first ? Dims{N, steps, in} : Dims{steps, N, in}, seed).requires_grad_();
  std::vector<Tensor> initial{random_tensor({states, N, module.state_size()}, seed + 1).requires_grad_()};
  if (lstm) initial.push_back(random_tensor({states, N, module.hidden_size()}, seed + 2).requires_grad_());

  const PackedSequence packed = nn::utils::rnn::pack_padded_sequence(x, lengths, batch_first, enforce_sorted);
  CHECK(packed.sorted_indices.defined() == !enforce_sorted);
  const auto [packed_output, finals] = call(module, packed, initial);
  CHECK(integers(packed_output.batch_sizes) == integers(packed.batch_sizes));
  const auto [padded, output_lengths] = nn::utils::rnn::pad_packed_sequence(packed_output, batch_first, -3.0, steps);
  CHECK(integers(output_lengths) == lengths);
  const Tensor output_weights = random_tensor(padded.sizes(), seed + 3);
  std::vector<Tensor> state_weights;
  Tensor loss = weighted_sum(padded, output_weights);
  for (size_t s = 0; s < finals.size(); ++s) {
    CHECK(finals[s].sizes() == initial[s].sizes());
    state_weights.push_back(random_tensor(finals[s].sizes(), seed + 4 + static_cast<uint32_t>(s)));
    loss = add(loss, weighted_sum(finals[s], state_weights[s]));
  }
  loss.backward();
  std::vector<Tensor> leaves{x};
  leaves.insert(leaves.end(), initial.begin(), initial.end());
  const std::vector<Values> packed_gradients = take_gradients(module, leaves);

  // Fresh leaves for the reference, so its gradients start from nothing.
  std::vector<Tensor> alone_leaves;
  for (const Tensor& leaf : leaves) alone_leaves.push_back(leaf.detach().clone().requires_grad_());
  Tensor alone_loss = zeros({}, {.dtype = kFloat64});
  for (int64_t b = 0; b < N; ++b) {
    const int64_t length = lengths[static_cast<size_t>(b)];
    INFO("sequence ", b, " of length ", length);
    const Tensor sequence = alone_leaves[0].narrow(batch_dim, b, 1).narrow(time_dim, 0, length);
    std::vector<Tensor> sequence_initial;
    for (size_t s = 1; s < alone_leaves.size(); ++s) sequence_initial.push_back(alone_leaves[s].narrow(1, b, 1));
    const auto [output, alone_finals] = call(module, sequence, sequence_initial);
    const Tensor packed_part = padded.narrow(batch_dim, b, 1);
    check_close(packed_part.narrow(time_dim, 0, length), values_of(output), 1e-12);
    if (length < steps)  // the steps past the sequence's end are padding_value
      check_close(packed_part.narrow(time_dim, length, steps - length),
                  Values(static_cast<size_t>((steps - length) * padded.size(2)), -3.0), 0.0);
    alone_loss =
        add(alone_loss, weighted_sum(output, output_weights.narrow(batch_dim, b, 1).narrow(time_dim, 0, length)));
    for (size_t s = 0; s < finals.size(); ++s) {
      check_close(finals[s].narrow(1, b, 1), values_of(alone_finals[s]), 1e-12);
      alone_loss = add(alone_loss, weighted_sum(alone_finals[s], state_weights[s].narrow(1, b, 1)));
    }
  }
  alone_loss.backward();
  const std::vector<Values> alone_gradients = take_gradients(module, alone_leaves);
  REQUIRE(alone_gradients.size() == packed_gradients.size());
  for (size_t g = 0; g < packed_gradients.size(); ++g) {
    INFO("gradient ", g, " (parameters first, then the input and the initial states)");
    check_close(packed_gradients[g], alone_gradients[g], 1e-11);
  }
}

const std::vector<int64_t> kUnsorted{3, 5, 1, 5, 2};  // a tie, and the longest not first

}  // namespace

TEST_CASE("packed RNN, LSTM and GRU equal each sequence run alone: unsorted lengths, two layers, both directions") {
  for (const bool relu : {false, true}) {
    INFO("RNN relu ", relu);
    nn::RNN rnn(3, 4,
                {.num_layers = 2,
                 .nonlinearity = relu ? nn::RNNNonlinearity::ReLU : nn::RNNNonlinearity::Tanh,
                 .bidirectional = true,
                 .dtype = kFloat64});
    check_against_single_sequences(*rnn, kUnsorted, 6, false, 701);
  }
  nn::LSTM lstm(3, 4, {.num_layers = 2, .bidirectional = true, .dtype = kFloat64});
  check_against_single_sequences(*lstm, kUnsorted, 6, false, 711);
  nn::GRU gru(3, 4, {.num_layers = 2, .bidirectional = true, .dtype = kFloat64});
  check_against_single_sequences(*gru, kUnsorted, 5, false, 721);
}

TEST_CASE("packed recurrent modules: batch_first, proj_size, sorted lengths, one direction and one sequence") {
  nn::LSTM projected(3, 5,
                     {.num_layers = 2, .batch_first = true, .bidirectional = true, .proj_size = 2, .dtype = kFloat64});
  check_against_single_sequences(*projected, kUnsorted, 7, false, 731);
  nn::GRU gru(2, 3, {.batch_first = true, .dtype = kFloat64});
  check_against_single_sequences(*gru, {4, 4, 2, 1}, 4, true, 741);  // enforce_sorted: no permutation
  nn::LSTM lstm(2, 3, {.bidirectional = true, .dtype = kFloat64});
  check_against_single_sequences(*lstm, {1, 3, 2}, 3, false, 751);
  check_against_single_sequences(*lstm, {3}, 3, true, 761);
  nn::RNN rnn(2, 3, {.num_layers = 3, .dtype = kFloat64});
  check_against_single_sequences(*rnn, {2, 2, 2}, 2, false, 771);  // equal lengths: the padded batch
}

TEST_CASE("packed recurrent modules: no initial states are zeros, and gradients match finite differences") {
  nn::GRU gru(2, 3, {.bidirectional = true, .dtype = kFloat64});
  const Tensor x = random_tensor({4, 3, 2}, 781);
  const std::vector<int64_t> lengths{2, 4, 3};
  const PackedSequence packed = nn::utils::rnn::pack_padded_sequence(x, lengths, false, false);
  const auto [from_zeros, h_zeros] = gru->forward(packed);
  const auto [given_zeros, h_given] = gru->forward(packed, zeros({2, 3, 3}, {.dtype = kFloat64}));
  check_close(from_zeros.data, values_of(given_zeros.data), 0.0);
  check_close(h_zeros, values_of(h_given), 0.0);

  const nn::LSTM lstm(2, 3, {.num_layers = 2, .bidirectional = true, .proj_size = 2, .dtype = kFloat64});
  gradcheck(
      [&](const std::vector<Tensor>& t) {
        const PackedSequence input = nn::utils::rnn::pack_padded_sequence(t[0], lengths, false, false);
        const auto [output, states] = lstm->forward(input, std::tuple{t[1], t[2]});
        return cat({output.data.reshape({-1}), std::get<0>(states).reshape({-1}), std::get<1>(states).reshape({-1})});
      },
      {x, random_tensor({4, 3, 2}, 782), random_tensor({4, 3, 3}, 783)});
}

TEST_CASE("packed recurrent modules under autocast: outputs and states in the autocast dtype, as padded ones") {
  // The reverse direction joins float32 initial rows to bfloat16 running states mid-sequence.
  const nn::LSTM lstm(3, 4, {.num_layers = 2, .bidirectional = true});
  const Tensor x = random_tensor({5, 3, 3}, 791, kFloat32);
  const Tensor h0 = random_tensor({4, 3, 4}, 792, kFloat32), c0 = random_tensor({4, 3, 4}, 793, kFloat32);
  const PackedSequence packed = nn::utils::rnn::pack_padded_sequence(x, std::vector<int64_t>{2, 5, 3}, false, false);
  const auto [exact, exact_states] = lstm->forward(packed, std::tuple{h0, c0});
  AutocastGuard autocast(kBFloat16);
  const auto [lowered, lowered_states] = lstm->forward(packed, std::tuple{h0, c0});
  CHECK(lowered.data.dtype() == kBFloat16);
  CHECK(std::get<0>(lowered_states).dtype() == kBFloat16);
  CHECK(std::get<1>(lowered_states).dtype() == kBFloat16);
  check_close(lowered.data, values_of(exact.data), 0.05);  // bfloat16's 8 bits over 5 steps and 2 layers
  check_close(std::get<1>(lowered_states), values_of(std::get<1>(exact_states)), 0.05);
}

TEST_CASE("packed recurrent modules refuse bad inputs and states by name") {
  const nn::LSTM lstm(3, 4, {.proj_size = 2});
  const PackedSequence packed =
      nn::utils::rnn::pack_padded_sequence(randn({5, 3, 3}), std::vector<int64_t>{2, 5, 4}, false, false);
  CHECK_THROWS_WITH_AS(lstm->forward(packed, std::tuple{zeros({1, 2, 2}), zeros({1, 3, 4})}),
                       doctest::Contains("LSTM: expected hx of size [1, 3, 2], got [1, 2, 2]"), Error);
  CHECK_THROWS_WITH_AS(lstm->forward(packed, std::tuple{zeros({1, 3, 2}), zeros({1, 3, 2})}),
                       doctest::Contains("LSTM: expected cx of size [1, 3, 4], got [1, 3, 2]"), Error);
  CHECK_THROWS_WITH_AS(nn::GRU(4, 4)->forward(packed),
                       doctest::Contains("GRU: input.size(-1) must be equal to input_size; expected 4, got 3"), Error);
  const PackedSequence three_d{packed.data.reshape({11, 3, 1}), packed.batch_sizes};
  CHECK_THROWS_WITH_AS(nn::RNN(3, 4)->forward(three_d), doctest::Contains("RNN: input must have 2 dimensions, got 3"),
                       Error);
  const PackedSequence mismatched{packed.data.narrow(0, 0, 10), packed.batch_sizes};
  CHECK_THROWS_WITH_AS(
      nn::RNN(3, 4)->forward(mismatched),
      doctest::Contains("RNN: the PackedSequence's data has shape [10, 3] but its batch_sizes [3, 3, 2, 2, 1] add up "
                        "to 11 steps"),
      Error);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { lstm->forward(packed, std::tuple{zeros({1, 2, 2}), zeros({1, 3, 4})}); });
  CHECK(names_line(message, line));
}

}  // namespace test_rnn_packed
