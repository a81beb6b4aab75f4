// nn::RNN, LSTM, GRU and their cells (runtime/nn/modules/rnn.h) against float64 loops of the
// formulas in PyTorch's documentation: stacked and bidirectional layers, initial states,
// batch_first and unbatched inputs, finite-difference gradients, dropout between layers,
// PyTorch's parameter names, shapes, order and initialisation, printed forms, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "error_of.h"
#include "numeric_check.h"
#include "runtime/nn/nn.h"

namespace test_rnn {

using namespace ember;
using namespace ember::testing;

namespace {

using Values = std::vector<double>;

double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// W [rows, columns] times v [columns] plus b (empty: none), row-major.
Values affine(const Values& w, const Values& v, const Values& b) {
  const size_t rows = w.size() / v.size();
  Values out(rows);
  for (size_t r = 0; r < rows; ++r) {
    double total = b.empty() ? 0.0 : b[r];
    for (size_t c = 0; c < v.size(); ++c) total += w[r * v.size() + c] * v[c];
    out[r] = total;
  }
  return out;
}

struct CellWeights {
  Values w_ih, w_hh, b_ih, b_hh;
};

// One step of the documented formulas for one sequence: state = {h} or {h, c}.
std::vector<Values> step_reference(nn::RNNKind kind, bool relu, const CellWeights& w, const Values& x,
                                   const std::vector<Values>& state) {
  const Values& h = state[0];
  const size_t H = h.size();
  const Values gx = affine(w.w_ih, x, w.b_ih), gh = affine(w.w_hh, h, w.b_hh);
  Values next(H), cell(H);
  for (size_t j = 0; j < H; ++j) {
    if (kind == nn::RNNKind::RNN) {
      const double sum = gx[j] + gh[j];
      next[j] = relu ? std::max(sum, 0.0) : std::tanh(sum);
    } else if (kind == nn::RNNKind::LSTM) {
      const double i = sigmoid_of(gx[j] + gh[j]), f = sigmoid_of(gx[H + j] + gh[H + j]);
      const double g = std::tanh(gx[2 * H + j] + gh[2 * H + j]), o = sigmoid_of(gx[3 * H + j] + gh[3 * H + j]);
      cell[j] = f * state[1][j] + i * g;
      next[j] = o * std::tanh(cell[j]);
    } else {
      const double r = sigmoid_of(gx[j] + gh[j]), z = sigmoid_of(gx[H + j] + gh[H + j]);
      const double n = std::tanh(gx[2 * H + j] + r * gh[2 * H + j]);
      next[j] = (1.0 - z) * n + z * h[j];
    }
  }
  if (kind == nn::RNNKind::LSTM) return {next, cell};
  return {next};
}

CellWeights weights_of(const nn::RNNBaseImpl::LayerWeights& w) {
  return {values_of(w.weight_ih), values_of(w.weight_hh), w.bias_ih.defined() ? values_of(w.bias_ih) : Values{},
          w.bias_hh.defined() ? values_of(w.bias_hh) : Values{}};
}

struct SequenceResult {
  Values output;               // [L, N, D H]
  std::vector<Values> finals;  // each [layers D, N, H]
};

// The whole module on x [L, N, in] with initial states [layers D, N, H] each.
SequenceResult sequence_reference(const nn::RNNBaseImpl& module, nn::RNNKind kind, const Values& x, int64_t L,
                                  int64_t N, const std::vector<Values>& initial) {
  const int64_t H = module.hidden_size(), D = module.num_directions(), layers = module.options().num_layers;
  const bool relu = module.options().nonlinearity == nn::RNNNonlinearity::ReLU;
  SequenceResult result{{}, std::vector<Values>(initial.size(), Values(layers * D * N * H))};
  Values layer_input = x;
  int64_t features = module.input_size();
  for (int64_t layer = 0; layer < layers; ++layer) {
    Values output(L * N * D * H);
    for (int64_t d = 0; d < D; ++d) {
      const CellWeights w = weights_of(module.weights(layer, d));
      for (int64_t n = 0; n < N; ++n) {
        std::vector<Values> state;
        for (const Values& s : initial)
          state.emplace_back(s.begin() + ((layer * D + d) * N + n) * H, s.begin() + ((layer * D + d) * N + n + 1) * H);
        for (int64_t i = 0; i < L; ++i) {
          const int64_t t = d == 0 ? i : L - 1 - i;
          const Values xt(layer_input.begin() + (t * N + n) * features,
                          layer_input.begin() + (t * N + n + 1) * features);
          state = step_reference(kind, relu, w, xt, state);
          for (int64_t j = 0; j < H; ++j) output[(t * N + n) * D * H + d * H + j] = state[0][j];
        }
        for (size_t s = 0; s < state.size(); ++s)
          for (int64_t j = 0; j < H; ++j) result.finals[s][((layer * D + d) * N + n) * H + j] = state[s][j];
      }
    }
    layer_input = output;
    features = D * H;
  }
  result.output = layer_input;
  return result;
}

const nn::RNNOptions kDeep{.num_layers = 2, .bidirectional = true, .dtype = kFloat64};

}  // namespace

TEST_CASE("RNN, LSTM and GRU match float64 loops: two layers, both directions, given initial states") {
  const int64_t L = 4, N = 2, in = 3, H = 5;
  const Tensor x = random_tensor({L, N, in}, 401);
  const Tensor h0 = random_tensor({4, N, H}, 402), c0 = random_tensor({4, N, H}, 403);
  for (const bool relu : {false, true}) {
    INFO("RNN relu ", relu);
    nn::RNNOptions options = kDeep;
    options.nonlinearity = relu ? nn::RNNNonlinearity::ReLU : nn::RNNNonlinearity::Tanh;
    const nn::RNN rnn(in, H, options);
    const SequenceResult expected = sequence_reference(*rnn, nn::RNNKind::RNN, values_of(x), L, N, {values_of(h0)});
    const auto [output, h_n] = rnn(x, h0);
    check_close(output, expected.output, 1e-12);
    check_close(h_n, expected.finals[0], 1e-12);
  }
  const nn::LSTM lstm(in, H, kDeep);
  const SequenceResult lstm_expected =
      sequence_reference(*lstm, nn::RNNKind::LSTM, values_of(x), L, N, {values_of(h0), values_of(c0)});
  const auto [lstm_output, lstm_states] = lstm->forward(x, std::tuple{h0, c0});
  check_close(lstm_output, lstm_expected.output, 1e-12);
  check_close(std::get<0>(lstm_states), lstm_expected.finals[0], 1e-12);
  check_close(std::get<1>(lstm_states), lstm_expected.finals[1], 1e-12);
  const nn::GRU gru(in, H, kDeep);
  const SequenceResult gru_expected = sequence_reference(*gru, nn::RNNKind::GRU, values_of(x), L, N, {values_of(h0)});
  const auto [gru_output, gru_h] = gru(x, h0);
  check_close(gru_output, gru_expected.output, 1e-12);
  check_close(gru_h, gru_expected.finals[0], 1e-12);
  // No initial state: zeros.
  const SequenceResult zero_start =
      sequence_reference(*gru, nn::RNNKind::GRU, values_of(x), L, N, {Values(4 * N * H, 0.0)});
  check_close(std::get<0>(gru(x)), zero_start.output, 1e-12);
}

TEST_CASE("recurrent modules: batch_first and unbatched inputs give the sequence-first results") {
  const int64_t L = 3, N = 2, in = 4, H = 3;
  manual_seed(21);
  const nn::LSTM lstm(in, H, {.bidirectional = true, .dtype = kFloat64});
  manual_seed(21);
  const nn::LSTM batch_first(in, H, {.batch_first = true, .bidirectional = true, .dtype = kFloat64});
  const Tensor x = random_tensor({L, N, in}, 411);
  const auto [expected, states] = lstm(x);
  const auto [output, batch_states] = batch_first(x.transpose(0, 1));
  CHECK(output.sizes() == Dims{N, L, 2 * H});
  check_close(output.transpose(0, 1), values_of(expected), 0.0);
  check_close(std::get<0>(batch_states), values_of(std::get<0>(states)), 0.0);  // states stay [layers D, N, H]
  const auto [single, single_states] = lstm(x.select(1, 1));
  CHECK(single.sizes() == Dims{L, 2 * H});
  CHECK(std::get<1>(single_states).sizes() == Dims{2, H});
  check_close(single, values_of(expected.select(1, 1)), 1e-14);
  check_close(std::get<1>(single_states), values_of(std::get<1>(states).select(1, 1)), 1e-14);
}

TEST_CASE("recurrent modules and cells: gradients match finite differences") {
  const nn::LSTM lstm(3, 2, {.num_layers = 2, .dtype = kFloat64});
  gradcheck(
      [&](const std::vector<Tensor>& t) {
        const auto [output, states] = lstm->forward(t[0], std::tuple{t[1], t[2]});
        return cat({output.reshape({-1}), std::get<1>(states).reshape({-1})});
      },
      {random_tensor({3, 2, 3}, 421), random_tensor({2, 2, 2}, 422), random_tensor({2, 2, 2}, 423)});
  const nn::GRU gru(3, 2, {.bidirectional = true, .dtype = kFloat64});
  gradcheck([&](const std::vector<Tensor>& t) { return std::get<0>(gru(t[0], t[1])); },
            {random_tensor({3, 2, 3}, 424), random_tensor({2, 2, 2}, 425)});
  const nn::GRUCell cell(3, 2, {.dtype = kFloat64});
  gradcheck([&](const std::vector<Tensor>& t) { return cell(t[0], t[1]); },
            {random_tensor({2, 3}, 426), random_tensor({2, 2}, 427)});
}

TEST_CASE("RNNCell, LSTMCell and GRUCell are one step of the formulas, unbatched and from zero states") {
  const Tensor x = random_tensor({2, 3}, 431), h = random_tensor({2, 4}, 432), c = random_tensor({2, 4}, 433);
  auto cell_weights = [](const nn::RNNCellBaseImpl& cell) {
    return CellWeights{values_of(cell.weight_ih), values_of(cell.weight_hh), values_of(cell.bias_ih),
                       values_of(cell.bias_hh)};
  };
  auto row = [](const Tensor& t, int64_t n) { return values_of(t.select(0, n)); };
  const nn::RNNCell rnn(3, 4, {.nonlinearity = nn::RNNNonlinearity::ReLU, .dtype = kFloat64});
  const nn::LSTMCell lstm(3, 4, {.dtype = kFloat64});
  const nn::GRUCell gru(3, 4, {.dtype = kFloat64});
  const Tensor rnn_next = rnn(x, h);
  const auto [lstm_h, lstm_c] = lstm->forward(x, std::tuple{h, c});
  const Tensor gru_next = gru(x, h);
  for (int64_t n = 0; n < 2; ++n) {
    INFO("row ", n);
    check_close(rnn_next.select(0, n),
                step_reference(nn::RNNKind::RNN, true, cell_weights(*rnn), row(x, n), {row(h, n)})[0], 1e-13);
    const std::vector<Values> lstm_expected =
        step_reference(nn::RNNKind::LSTM, false, cell_weights(*lstm), row(x, n), {row(h, n), row(c, n)});
    check_close(lstm_h.select(0, n), lstm_expected[0], 1e-13);
    check_close(lstm_c.select(0, n), lstm_expected[1], 1e-13);
    check_close(gru_next.select(0, n),
                step_reference(nn::RNNKind::GRU, false, cell_weights(*gru), row(x, n), {row(h, n)})[0], 1e-13);
  }
  check_close(gru(x.select(0, 1), h.select(0, 1)), values_of(gru_next.select(0, 1)), 1e-14);
  check_close(gru(x).select(0, 0),
              step_reference(nn::RNNKind::GRU, false, cell_weights(*gru), row(x, 0), {Values(4, 0.0)})[0], 1e-13);
}

TEST_CASE("recurrent modules: PyTorch's parameters, initialisation, printed forms and dropout") {
  const nn::LSTM lstm(3, 4, {.num_layers = 2, .bidirectional = true});
  std::vector<std::string> names;
  for (const auto& [name, parameter] : lstm->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                          "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                                          "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1",
                                          "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse",
                                          "bias_ih_l1_reverse", "bias_hh_l1_reverse"});
  CHECK(lstm->weights(1, 1).weight_ih.sizes() == Dims{16, 8});  // 4 gates; input: both directions of layer 0
  for (const Tensor& parameter : lstm->parameters())
    for (double w : values_of(parameter)) CHECK(std::abs(w) <= 0.5);  // 1 / sqrt(hidden_size)
  CHECK(nn::GRU(3, 4, {.bias = false})->parameters().size() == 2);
  CHECK(nn::GRUCell(3, 4)->weight_ih.sizes() == Dims{12, 3});
  std::ostringstream printed;
  printed << nn::RNN(3, 4, {.num_layers = 2, .nonlinearity = nn::RNNNonlinearity::ReLU, .dropout = 0.5}) << "|"
          << nn::LSTMCell(3, 4, {.bias = false});
  CHECK(printed.str() == "RNN(3, 4, num_layers=2, dropout=0.5)|LSTMCell(3, 4, bias=False)");

  const nn::GRU gru(3, 4, {.num_layers = 2, .dropout = 0.5, .dtype = kFloat64});
  const Tensor x = random_tensor({5, 2, 3}, 441);
  gru->eval();
  const Tensor evaluated = std::get<0>(gru(x));
  gru->train();
  manual_seed(3);
  const Tensor trained = std::get<0>(gru(x));
  CHECK(values_of(trained) != values_of(evaluated));
  manual_seed(3);
  check_close(std::get<0>(gru(x)), values_of(trained), 0.0);
}

TEST_CASE("recurrent modules and cells refuse bad arguments by name") {
  const nn::LSTM lstm(3, 4);
  const Tensor x = randn({5, 2, 3});
  CHECK_THROWS_WITH_AS(lstm(randn({5, 2, 4})),
                       doctest::Contains("LSTM: input.size(-1) must be equal to input_size; expected 3, got 4"), Error);
  CHECK_THROWS_WITH_AS(lstm->forward(x, std::tuple{zeros({1, 3, 4}), zeros({1, 2, 4})}),
                       doctest::Contains("LSTM: expected hx of size [1, 2, 4], got [1, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(lstm->forward(x, std::tuple{zeros({1, 2, 4}), zeros({2, 4})}),
                       doctest::Contains("for batched 3-D input, cx should also be 3-D but got a 2-D tensor"), Error);
  CHECK_THROWS_WITH_AS(lstm(randn({0, 2, 3})), doctest::Contains("expected sequence length to be larger than 0"),
                       Error);
  CHECK_THROWS_WITH_AS(lstm(randn({3})), doctest::Contains("expected input to be 2-D (unbatched) or 3-D, got 1-D"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::GRU(3, 0), doctest::Contains("GRU: hidden_size must be greater than zero"), Error);
  CHECK_THROWS_WITH_AS(nn::RNN(3, 4, {.num_layers = 0}), doctest::Contains("num_layers must be greater than zero"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::RNN(3, 4, {.dropout = 1.5}), doctest::Contains("dropout should be a number in range [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::GRUCell(3, 4)(randn({2, 5})),
                       doctest::Contains("GRUCell: input has inconsistent input_size: got 5 expected 3"), Error);
  CHECK_THROWS_WITH_AS(
      nn::RNNCell(3, 4)(randn({2, 3}), randn({3, 4})),
      doctest::Contains("expected the hidden state of shape [2, 4] (input batch, hidden_size), got [3, 4]"), Error);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { lstm(randn({5, 2, 4})); });
  CHECK(names_line(message, line));
}

}  // namespace test_rnn
