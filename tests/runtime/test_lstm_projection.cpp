// nn::LSTM with proj_size (runtime/nn/modules/rnn.h) against a float64 loop of PyTorch 2.3's
// documented formulas (h_t = (o_t * tanh(c_t)) W_hr^T): one and two layers, both directions, given
// initial states, batch_first and unbatched inputs, finite-difference gradients of the input, the
// states and every parameter, PyTorch's parameter names, shapes, order and initialisation, the
// printed form, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/nn/nn.h"

namespace test_lstm_projection {

using namespace ember;
using namespace ember::testing;

namespace {

using Values = std::vector<double>;

void check_values(const Tensor& actual, const Values& expected, double tolerance) {
  const Values got = values_of(actual);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": got ", got[i], ", expected ", expected[i]);
    CHECK(std::abs(got[i] - expected[i]) <= tolerance);
  }
}

double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Row r of W [rows, v.size()] dotted with v.
double row_dot(const Values& w, size_t r, const Values& v) {
  double total = 0.0;
  for (size_t c = 0; c < v.size(); ++c) total += w[r * v.size() + c] * v[c];
  return total;
}

struct Result {
  Values output, h_n, c_n;  // [L, N, D P], [layers D, N, P], [layers D, N, H]
};

// The projected LSTM on x [L, N, in] from h0 [layers D, N, P] and c0 [layers D, N, H], one
// sequence and one step at a time.
Result reference(const nn::LSTMImpl& lstm, const Values& x, int64_t L, int64_t N, const Values& h0, const Values& c0) {
  const int64_t H = lstm.hidden_size(), P = lstm.options().proj_size, D = lstm.num_directions();
  const int64_t layers = lstm.options().num_layers;
  Result result{{}, Values(layers * D * N * P), Values(layers * D * N * H)};
  Values layer_input = x;
  int64_t features = lstm.input_size();
  for (int64_t layer = 0; layer < layers; ++layer) {
    Values output(L * N * D * P);
    for (int64_t d = 0; d < D; ++d) {
      const auto& weights = lstm.weights(layer, d);
      const Values w_ih = values_of(weights.weight_ih), w_hh = values_of(weights.weight_hh);
      const Values b_ih = values_of(weights.bias_ih), b_hh = values_of(weights.bias_hh);
      const Values w_hr = values_of(weights.weight_hr);
      const int64_t k = layer * D + d;
      for (int64_t n = 0; n < N; ++n) {
        Values h(h0.begin() + (k * N + n) * P, h0.begin() + (k * N + n + 1) * P);
        Values c(c0.begin() + (k * N + n) * H, c0.begin() + (k * N + n + 1) * H);
        for (int64_t i = 0; i < L; ++i) {
          const int64_t t = d == 0 ? i : L - 1 - i;
          const Values xt(layer_input.begin() + (t * N + n) * features,
                          layer_input.begin() + (t * N + n + 1) * features);
          auto pre = [&](int64_t gate, int64_t j) {
            const size_t r = static_cast<size_t>(gate * H + j);
            return row_dot(w_ih, r, xt) + b_ih[r] + row_dot(w_hh, r, h) + b_hh[r];
          };
          Values unprojected(H);
          for (int64_t j = 0; j < H; ++j) {
            c[j] = sigmoid_of(pre(1, j)) * c[j] + sigmoid_of(pre(0, j)) * std::tanh(pre(2, j));
            unprojected[j] = sigmoid_of(pre(3, j)) * std::tanh(c[j]);
          }
          for (int64_t p = 0; p < P; ++p) h[p] = row_dot(w_hr, p, unprojected);
          for (int64_t p = 0; p < P; ++p) output[(t * N + n) * D * P + d * P + p] = h[p];
        }
        std::copy(h.begin(), h.end(), result.h_n.begin() + (k * N + n) * P);
        std::copy(c.begin(), c.end(), result.c_n.begin() + (k * N + n) * H);
      }
    }
    layer_input = output;
    features = D * P;
  }
  result.output = layer_input;
  return result;
}

}  // namespace

TEST_CASE("LSTM with proj_size matches a float64 loop: one and two layers, both directions, given states") {
  const int64_t L = 4, N = 3, in = 3, H = 5, P = 2;
  const Tensor x = small_tensor({L, N, in}, 601);
  for (const auto& [layers, bidirectional] : {std::pair{int64_t{1}, false}, std::pair{int64_t{2}, true}}) {
    INFO("layers ", layers, ", bidirectional ", bidirectional);
    const nn::LSTM lstm(in, H,
                        {.num_layers = layers, .bidirectional = bidirectional, .proj_size = P, .dtype = kFloat64});
    const int64_t states = layers * (bidirectional ? 2 : 1);
    const Tensor h0 = small_tensor({states, N, P}, 602), c0 = small_tensor({states, N, H}, 603);
    const Result expected = reference(*lstm, values_of(x), L, N, values_of(h0), values_of(c0));
    const auto [output, final_states] = lstm->forward(x, std::tuple{h0, c0});
    CHECK(output.sizes() == Dims{L, N, (bidirectional ? 2 : 1) * P});
    CHECK(std::get<0>(final_states).sizes() == Dims{states, N, P});
    CHECK(std::get<1>(final_states).sizes() == Dims{states, N, H});
    check_values(output, expected.output, 1e-12);
    check_values(std::get<0>(final_states), expected.h_n, 1e-12);
    check_values(std::get<1>(final_states), expected.c_n, 1e-12);
    // No initial states: zeros of the two widths.
    const Result from_zeros =
        reference(*lstm, values_of(x), L, N, Values(states * N * P, 0.0), Values(states * N * H, 0.0));
    check_values(std::get<0>(lstm(x)), from_zeros.output, 1e-12);
  }
}

TEST_CASE("LSTM with proj_size: batch_first and unbatched inputs match the float64 loop") {
  const int64_t L = 3, N = 2, in = 4, H = 4, P = 3;
  const nn::LSTM lstm(in, H,
                      {.num_layers = 2, .batch_first = true, .bidirectional = true, .proj_size = P, .dtype = kFloat64});
  const Tensor x = small_tensor({L, N, in}, 611);
  const Tensor h0 = small_tensor({4, N, P}, 612), c0 = small_tensor({4, N, H}, 613);
  const Result expected = reference(*lstm, values_of(x), L, N, values_of(h0), values_of(c0));
  const auto [output, states] = lstm->forward(x.transpose(0, 1).contiguous(), std::tuple{h0, c0});
  CHECK(output.sizes() == Dims{N, L, 2 * P});
  check_values(output.transpose(0, 1), expected.output, 1e-12);
  check_values(std::get<0>(states), expected.h_n, 1e-12);  // states are never batch-first
  check_values(std::get<1>(states), expected.c_n, 1e-12);

  // One sequence ([L, in], states [layers D, P] and [layers D, H]): the loop with N = 1.
  const Tensor x1 = x.select(1, 1), h1 = h0.select(1, 1), c1 = c0.select(1, 1);
  const Result single = reference(*lstm, values_of(x1), L, 1, values_of(h1), values_of(c1));
  const auto [single_output, single_states] = lstm->forward(x1, std::tuple{h1, c1});
  CHECK(single_output.sizes() == Dims{L, 2 * P});
  CHECK(std::get<0>(single_states).sizes() == Dims{4, P});
  CHECK(std::get<1>(single_states).sizes() == Dims{4, H});
  check_values(single_output, single.output, 1e-12);
  check_values(std::get<0>(single_states), single.h_n, 1e-12);
  check_values(std::get<1>(single_states), single.c_n, 1e-12);
}

TEST_CASE("LSTM with proj_size: gradients of the input, the states and every parameter match finite differences") {
  const nn::LSTM lstm(2, 3, {.num_layers = 2, .bidirectional = true, .proj_size = 2, .dtype = kFloat64});
  // The parameters are float64 leaves: gradcheck perturbs them in place like the inputs.
  std::vector<Tensor> inputs{leaf({3, 2, 2}, 621), leaf({4, 2, 2}, 622), leaf({4, 2, 3}, 623)};
  for (const Tensor& parameter : lstm->parameters()) inputs.push_back(parameter);
  CHECK(inputs.size() == 3 + 20);
  gradcheck_leaves(
      [&](const std::vector<Tensor>& t) {
        const auto [output, states] = lstm->forward(t[0], std::tuple{t[1], t[2]});
        return cat({output.reshape({-1}), std::get<0>(states).reshape({-1}), std::get<1>(states).reshape({-1})});
      },
      inputs);
}

TEST_CASE("LSTM with proj_size: PyTorch's parameter names, shapes, order, initialisation and printed form") {
  const nn::LSTM lstm(3, 5, {.num_layers = 2, .bidirectional = true, .proj_size = 2});
  std::vector<std::string> names;
  std::vector<Dims> shapes;
  for (const auto& [name, parameter] : lstm->named_parameters()) {
    names.push_back(name);
    shapes.push_back(parameter.sizes());
  }
  std::vector<std::string> expected_names;
  std::vector<Dims> expected_shapes;
  for (const std::string layer : {"_l0", "_l1"})
    for (const std::string direction : {"", "_reverse"}) {
      for (const std::string weight : {"weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"})
        expected_names.push_back(weight + layer + direction);
      // Layer 1's input is both directions' projected outputs: 2 * proj_size.
      expected_shapes.insert(expected_shapes.end(),
                             {Dims{20, layer == "_l0" ? 3 : 4}, Dims{20, 2}, Dims{20}, Dims{20}, Dims{2, 5}});
    }
  CHECK(names == expected_names);
  CHECK(shapes == expected_shapes);
  for (const Tensor& parameter : lstm->parameters())
    for (double w : values_of(parameter)) CHECK(std::abs(w) <= 1.0 / std::sqrt(5.0));  // 1 / sqrt(hidden_size)
  const Values drawn = values_of(lstm->weights(1, 1).weight_hr);
  CHECK(std::abs(drawn[0] - drawn[1]) > 0.0);  // drawn, not left empty

  std::vector<std::string> unbiased;
  for (const auto& [name, parameter] : nn::LSTM(3, 5, {.bias = false, .proj_size = 4})->named_parameters())
    unbiased.push_back(name);
  CHECK(unbiased == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "weight_hr_l0"});
  std::ostringstream printed;
  printed << lstm << "|" << nn::LSTM(3, 5, {.proj_size = 0});
  CHECK(printed.str() == "LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True)|LSTM(3, 5)");
}

TEST_CASE("LSTM with proj_size refuses bad sizes and states by name") {
  CHECK_THROWS_WITH_AS(
      nn::RNN(3, 4, {.proj_size = 2}),
      doctest::Contains("RNN: proj_size argument is only supported for LSTM, not RNN or GRU (got proj_size=2)"), Error);
  CHECK_THROWS_WITH_AS(nn::GRU(3, 4, {.proj_size = 1}),
                       doctest::Contains("GRU: proj_size argument is only supported for LSTM, not RNN or GRU"), Error);
  CHECK_THROWS_WITH_AS(
      nn::LSTM(3, 4, {.proj_size = -1}),
      doctest::Contains("LSTM: proj_size should be a positive integer or zero to disable projections, got -1"), Error);
  CHECK_THROWS_WITH_AS(nn::LSTM(3, 4, {.proj_size = 4}),
                       doctest::Contains("LSTM: proj_size has to be smaller than hidden_size, got proj_size=4 >= 4"),
                       Error);
  const int construction_line = __LINE__ + 1;
  const std::string construction = error_of([] { nn::LSTM(3, 4, {.proj_size = 7}); });
  CHECK(names_line(construction, construction_line));

  const nn::LSTM lstm(3, 4, {.num_layers = 2, .proj_size = 2});
  const Tensor x = randn({5, 2, 3});
  // h is proj_size wide, c hidden_size wide: each message names the shape its state must have.
  CHECK_THROWS_WITH_AS(lstm->forward(x, std::tuple{zeros({2, 2, 4}), zeros({2, 2, 4})}),
                       doctest::Contains("LSTM: expected hx of size [2, 2, 2], got [2, 2, 4]"), Error);
  CHECK_THROWS_WITH_AS(lstm->forward(x, std::tuple{zeros({2, 2, 2}), zeros({2, 2, 2})}),
                       doctest::Contains("LSTM: expected cx of size [2, 2, 4], got [2, 2, 2]"), Error);
  CHECK_THROWS_WITH_AS(lstm->forward(x.select(1, 0), std::tuple{zeros({2, 4}), zeros({2, 4})}),
                       doctest::Contains("LSTM: expected hx of size [2, 2], got [2, 4]"), Error);
  const int forward_line = __LINE__ + 1;
  const std::string forward = error_of([&] { lstm->forward(x, std::tuple{zeros({2, 2, 2}), zeros({2, 2, 2})}); });
  CHECK(names_line(forward, forward_line));
}

}  // namespace test_lstm_projection
