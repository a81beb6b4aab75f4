// torch.nn's recurrent layers: RNN (tanh or relu), LSTM and GRU over whole sequences (stacked
// layers, bidirectional, dropout between layers, batch_first, unbatched inputs) and their cells
// RNNCell, LSTMCell and GRUCell. Parameters, gate order, initialisation and shapes are PyTorch's;
// the steps are ember ops (runtime/nn/modules/rnn.cpp, rnn_cells.cpp, rnn_steps.cpp), so autograd,
// CUDA and capture come with them; under autocast the steps, states included, run in the autocast
// dtype (PyTorch's lower-precision cells). The input projections of a layer are one GEMM over the
// whole sequence, the recurrent ones one per step, as PyTorch's CPU path. LSTM's proj_size is
// PyTorch's (weight_hr projects each h). The modules also take a PackedSequence (rnn_packed.h):
// each sequence then runs its own length only, as PyTorch's packed path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/nn/holder.h"
#include "runtime/nn/modules/rnn_packed.h"
#include "runtime/random/generator.h"

namespace ember::nn {

enum class RNNNonlinearity { Tanh, ReLU };

// The arguments after input_size and hidden_size, PyTorch's defaults.
struct RNNOptions {
  int64_t num_layers = 1;
  RNNNonlinearity nonlinearity = RNNNonlinearity::Tanh;  // RNN only
  bool bias = true;
  bool batch_first = false;  // input and output [N, L, .] instead of [L, N, .] (not the states)
  double dropout = 0.0;      // on the outputs of each layer but the last, in training mode
  bool bidirectional = false;
  int64_t proj_size = 0;  // LSTM only: > 0 projects each h_t to this size through weight_hr (0: no projection)
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
  Generator* generator = nullptr;               // initialisation draws; null: the device's default
};

enum class RNNKind { RNN, LSTM, GRU };

// What RNN, LSTM and GRU share: the per-layer, per-direction parameters weight_ih_l{k}[_reverse]
// [gates * hidden, layer input], weight_hh_l{k} [gates * hidden, state], bias_ih_l{k},
// bias_hh_l{k} [gates * hidden] and, for an LSTM with proj_size, weight_hr_l{k} [proj_size, hidden],
// all drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)). The state h (and so each layer's output) is
// proj_size wide with a projection, hidden_size wide without; an LSTM's cell state c stays hidden_size.
class RNNBaseImpl : public Module {
 public:
  RNNBaseImpl(std::string name, RNNKind kind, int64_t input_size, int64_t hidden_size, RNNOptions options,
              Where where);
  void reset_parameters(Generator* generator = nullptr);

  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  const RNNOptions& options() const { return options_; }
  int64_t num_directions() const { return options_.bidirectional ? 2 : 1; }
  // The width of h and of each direction's output: proj_size when set, else hidden_size.
  int64_t state_size() const { return options_.proj_size > 0 ? options_.proj_size : hidden_size_; }

  // The parameters of one layer and direction (biases undefined without bias, weight_hr without proj_size).
  struct LayerWeights {
    Tensor weight_ih, weight_hh, bias_ih, bias_hh, weight_hr;
  };
  const LayerWeights& weights(int64_t layer, int64_t direction) const {
    return weights_[static_cast<size_t>(layer * num_directions() + direction)];
  }

 protected:
  // input as the user gave it (batch_first and unbatched forms handled here) and the initial
  // states [layers * directions, N, H] (LSTM: h and c; RNN / GRU: h only; undefined: zeros) ->
  // (output, final states), in the user's layout.
  std::tuple<Tensor, std::vector<Tensor>> run(const Tensor& input, std::vector<Tensor> states) const;
  // The same over a packed batch: the states [layers * directions, B, .] are in the original batch
  // order, as the final ones returned (PyTorch permutes them with sorted_indices, then back).
  std::tuple<utils::rnn::PackedSequence, std::vector<Tensor>> run(const utils::rnn::PackedSequence& input,
                                                                  std::vector<Tensor> states) const;
  std::string extra_repr() const override;

 private:
  // Every layer and direction over data [rows, features] laid out as a packed sequence's:
  // batch_sizes[t] rows for step t, the sequences sorted longest first (padded input: all N).
  // states [layers * directions, batch_sizes[0], .] -> (last layer's output [rows, directions * .],
  // final states of the same shapes as the given ones).
  std::tuple<Tensor, std::vector<Tensor>> run_layers(const Tensor& data, const std::vector<int64_t>& batch_sizes,
                                                     const std::vector<Tensor>& states) const;

  RNNKind kind_;
  int64_t input_size_, hidden_size_;
  RNNOptions options_;
  std::vector<LayerWeights> weights_;
};

class RNNImpl : public RNNBaseImpl {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size, RNNOptions options = {}, Where where = Where::current());
  // input [L, N, input_size] ([N, L, .] with batch_first; [L, input_size] unbatched), hx
  // [layers * directions, N, hidden] (undefined: zeros) -> (output [L, N, directions * hidden],
  // h_n [layers * directions, N, hidden]).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {}, Where where = Where::current());
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Where where) { return forward(input, {}, where); }
  // A packed batch (data [rows, input_size]) -> (packed output [rows, directions * hidden], h_n);
  // hx and h_n are [layers * directions, B, hidden] in the batch's original order.
  std::tuple<utils::rnn::PackedSequence, Tensor> forward(const utils::rnn::PackedSequence& input, const Tensor& hx = {},
                                                         Where where = Where::current());
};

class LSTMImpl : public RNNBaseImpl {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size, RNNOptions options = {}, Where where = Where::current());
  // As RNN's, with (h_0, c_0) in and (h_n, c_n) out; gates i, f, g, o in that order of rows. With
  // proj_size P: h_t = (o * tanh(c_t)) W_hr^T, so output [L, N, directions * P], h_0 / h_n
  // [layers * directions, N, P], c_0 / c_n [layers * directions, N, hidden].
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx = std::nullopt,
                                                         Where where = Where::current());
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input, Where where) {
    return forward(input, std::nullopt, where);
  }
  // A packed batch, as RNN's.
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward(
      const utils::rnn::PackedSequence& input, std::optional<std::tuple<Tensor, Tensor>> hx = std::nullopt,
      Where where = Where::current());
};

class GRUImpl : public RNNBaseImpl {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size, RNNOptions options = {}, Where where = Where::current());
  // As RNN's; gates r, z, n in that order of rows.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {}, Where where = Where::current());
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Where where) { return forward(input, {}, where); }
  // A packed batch, as RNN's.
  std::tuple<utils::rnn::PackedSequence, Tensor> forward(const utils::rnn::PackedSequence& input, const Tensor& hx = {},
                                                         Where where = Where::current());
};

class RNN : public ModuleHolder<RNNImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  RNN(int64_t input_size, int64_t hidden_size, RNNOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<RNNImpl>(input_size, hidden_size, options, where)) {}
};
class LSTM : public ModuleHolder<LSTMImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  LSTM(int64_t input_size, int64_t hidden_size, RNNOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<LSTMImpl>(input_size, hidden_size, options, where)) {}
};
class GRU : public ModuleHolder<GRUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  GRU(int64_t input_size, int64_t hidden_size, RNNOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<GRUImpl>(input_size, hidden_size, options, where)) {}
};

// The cells: one step. Parameters weight_ih [gates * hidden, input], weight_hh, bias_ih, bias_hh.
struct RNNCellOptions {
  bool bias = true;
  RNNNonlinearity nonlinearity = RNNNonlinearity::Tanh;  // RNNCell only
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;
  Generator* generator = nullptr;
};

class RNNCellBaseImpl : public Module {
 public:
  RNNCellBaseImpl(std::string name, int64_t gates, int64_t input_size, int64_t hidden_size, RNNCellOptions options,
                  Where where);
  void reset_parameters(Generator* generator = nullptr);
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  const RNNCellOptions& options() const { return options_; }

  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  // input [N, input_size] or [input_size]; a state [N, hidden] / [hidden] (undefined: zeros).
  // Returns whether the input is batched, the input and the states made [N, .].
  bool batched(const Tensor& input, std::vector<Tensor*> states) const;
  std::string extra_repr() const override;

 private:
  int64_t input_size_, hidden_size_;
  RNNCellOptions options_;
};

class RNNCellImpl : public RNNCellBaseImpl {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size, RNNCellOptions options = {}, Where where = Where::current());
  // h' = nonlinearity(x W_ih^T + b_ih + h W_hh^T + b_hh).
  Tensor forward(const Tensor& input, const Tensor& hx = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where) { return forward(input, {}, where); }
};

class LSTMCellImpl : public RNNCellBaseImpl {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size, RNNCellOptions options = {}, Where where = Where::current());
  // (h', c') from (h, c) (nullopt: zeros).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx = std::nullopt,
                                     Where where = Where::current());
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Where where) { return forward(input, std::nullopt, where); }
};

class GRUCellImpl : public RNNCellBaseImpl {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size, RNNCellOptions options = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, const Tensor& hx = {}, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where) { return forward(input, {}, where); }
};

class RNNCell : public ModuleHolder<RNNCellImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  RNNCell(int64_t input_size, int64_t hidden_size, RNNCellOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<RNNCellImpl>(input_size, hidden_size, options, where)) {}
};
class LSTMCell : public ModuleHolder<LSTMCellImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  LSTMCell(int64_t input_size, int64_t hidden_size, RNNCellOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<LSTMCellImpl>(input_size, hidden_size, options, where)) {}
};
class GRUCell : public ModuleHolder<GRUCellImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  GRUCell(int64_t input_size, int64_t hidden_size, RNNCellOptions options = {}, Where where = Where::current())
      : ModuleHolder(std::make_shared<GRUCellImpl>(input_size, hidden_size, options, where)) {}
};

}  // namespace ember::nn
