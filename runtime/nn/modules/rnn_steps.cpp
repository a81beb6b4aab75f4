// The recurrent cells' step formulas (PyTorch's aten/src/ATen/native/RNN.cpp cells):
//   RNN:  h' = act(x_proj + h W_hh^T + b_hh)
//   LSTM: i, f, g, o = split(x_proj + h W_hh^T + b_hh); c' = sigmoid(f) c + sigmoid(i) tanh(g);
//         h' = sigmoid(o) tanh(c'), times W_hr^T with a projection (proj_size)
//   GRU:  r, z, n from the input's and the state's projections kept apart;
//         n = tanh(n_x + sigmoid(r) * n_h); h' = n + sigmoid(z) (h - n)
#include "runtime/nn/modules/rnn_steps.h"

#include <cmath>

#include "runtime/autocast.h"
#include "runtime/functional.h"
#include "runtime/nn/init.h"

namespace ember::nn::detail {

namespace {

// Gate `index` of `count` equal slices of the last dim.
Tensor gate(const Tensor& gates, int64_t index, int64_t hidden) {
  return slice(gates, -1, index * hidden, (index + 1) * hidden);
}

}  // namespace

std::vector<Tensor> recurrent_step(RNNKind kind, RNNNonlinearity nonlinearity, const Tensor& projected_input,
                                   const std::vector<Tensor>& given_states, const Tensor& weight_hh,
                                   const Tensor& bias_hh, const Tensor& weight_hr) {
  // Under autocast the cells are on PyTorch's lower-precision list (lstm_cell, gru_cell, ...):
  // float32 states are lowered too, or they would lift each step's 16-bit products back to float32.
  std::vector<Tensor> states = given_states;
  if (autocast_enabled())
    for (Tensor& state : states)
      if (state.dtype() == kFloat32) state = to_dtype(state, autocast_dtype());
  const Tensor& h = states[0];
  // The gates' width: c's for an LSTM, whose h may be projected to another width.
  const int64_t hidden = states.back().size(-1);
  const Tensor projected_state = linear(h, weight_hh, bias_hh);
  switch (kind) {
    case RNNKind::RNN: {
      const Tensor sum = add(projected_input, projected_state);
      return {nonlinearity == RNNNonlinearity::ReLU ? relu(sum) : tanh(sum)};
    }
    case RNNKind::LSTM: {
      const Tensor gates = add(projected_input, projected_state);
      const Tensor input_gate = sigmoid(gate(gates, 0, hidden)), forget_gate = sigmoid(gate(gates, 1, hidden));
      const Tensor cell_gate = tanh(gate(gates, 2, hidden)), output_gate = sigmoid(gate(gates, 3, hidden));
      const Tensor c = add(mul(forget_gate, states[1]), mul(input_gate, cell_gate));
      const Tensor next = mul(output_gate, tanh(c));
      return {weight_hr.defined() ? linear(next, weight_hr) : next, c};
    }
    case RNNKind::GRU: {
      const Tensor reset = sigmoid(add(gate(projected_input, 0, hidden), gate(projected_state, 0, hidden)));
      const Tensor update = sigmoid(add(gate(projected_input, 1, hidden), gate(projected_state, 1, hidden)));
      const Tensor candidate =
          tanh(add(gate(projected_input, 2, hidden), mul(reset, gate(projected_state, 2, hidden))));
      return {add(candidate, mul(update, sub(h, candidate)))};
    }
  }
  return {};
}

void draw_recurrent_weights(const std::vector<Tensor>& parameters, int64_t hidden_size, Generator* generator) {
  const double bound = hidden_size > 0 ? 1.0 / std::sqrt(static_cast<double>(hidden_size)) : 0.0;
  for (const Tensor& parameter : parameters) init::uniform_(parameter, -bound, bound, generator);
}

}  // namespace ember::nn::detail
