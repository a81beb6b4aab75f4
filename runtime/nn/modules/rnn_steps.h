// One time step of each recurrent cell, shared by the sequence modules (rnn.cpp) and the cells
// (rnn_cells.cpp): the formulas of PyTorch's CPU kernels, with the input's projection (x W_ih^T +
// b_ih) computed by the caller, so a whole sequence's can be one GEMM.
#pragma once

#include <vector>

#include "runtime/nn/modules/rnn.h"

namespace ember::nn::detail {

// states: {h} for RNN and GRU, {h, c} for LSTM, each [N, H]; returns the next ones.
// projected_input [N, gates * H]; weight_hh [gates * H, H]; bias_hh (or undefined) [gates * H].
// An LSTM with a projection passes weight_hr [P, H]: h is then [N, P], weight_hh [4 H, P], and the
// next h is (o * tanh(c')) W_hr^T.
std::vector<Tensor> recurrent_step(RNNKind kind, RNNNonlinearity nonlinearity, const Tensor& projected_input,
                                   const std::vector<Tensor>& states, const Tensor& weight_hh, const Tensor& bias_hh,
                                   const Tensor& weight_hr = {});

// PyTorch's reset_parameters of every recurrent module: U(-1/sqrt(hidden), 1/sqrt(hidden)).
void draw_recurrent_weights(const std::vector<Tensor>& parameters, int64_t hidden_size, Generator* generator);

}  // namespace ember::nn::detail
