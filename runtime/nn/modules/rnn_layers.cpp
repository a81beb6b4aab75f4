// The layer loop of nn::RNN, LSTM and GRU, shared by padded and packed inputs: the sequence is laid
// out as a packed one (batch_sizes[t] rows for step t, longest sequences first; a padded batch is
// the case of equal lengths), so each sequence runs exactly its own steps. Per layer and direction
// the input projections of every step are one GEMM, then one recurrent step per time step; the
// directions' outputs are joined on the feature dim, with dropout between layers while training.
#include <functional>
#include <numeric>

#include "runtime/functional.h"
#include "runtime/nn/modules/rnn.h"
#include "runtime/nn/modules/rnn_steps.h"
#include "runtime/nn/training_guard.h"

namespace ember::nn {

namespace {

// One recurrent step: (the step's input projections [rows, gates * H], states [rows, .]) -> next states.
using Step = std::function<std::vector<Tensor>(const Tensor&, const std::vector<Tensor>&)>;

// Forward in time. When the batch shrinks at step t, the sequences that ended (the last rows: they
// are sorted longest first) keep their states as final ones; PyTorch's packed CPU layer does the same.
std::vector<Tensor> walk_forward(const Step& step, const Tensor& projected, const std::vector<int64_t>& batch_sizes,
                                 const std::vector<int64_t>& offsets, std::vector<Tensor> state,
                                 std::vector<Tensor>& outputs) {
  std::vector<std::vector<Tensor>> ended(state.size());
  for (size_t t = 0; t < batch_sizes.size(); ++t) {
    const int64_t active = batch_sizes[t], rows = state[0].size(0);
    if (active < rows)
      for (size_t s = 0; s < state.size(); ++s) {
        ended[s].push_back(state[s].narrow(0, active, rows - active));
        state[s] = state[s].narrow(0, 0, active);
      }
    state = step(projected.narrow(0, offsets[t], active), state);
    outputs[t] = state[0];
  }
  for (size_t s = 0; s < state.size(); ++s) {
    if (ended[s].empty()) continue;
    // The rows set aside last are the ones right after the still-running ones.
    std::vector<Tensor> pieces{state[s]};
    pieces.insert(pieces.end(), ended[s].rbegin(), ended[s].rend());
    state[s] = cat(pieces, 0);
  }
  return state;
}

// Backward in time: each sequence starts from its initial state at its own last step, joining the
// batch when it grows; after step 0 every sequence has run, so the state is the final one.
std::vector<Tensor> walk_backward(const Step& step, const Tensor& projected, const std::vector<int64_t>& batch_sizes,
                                  const std::vector<int64_t>& offsets, const std::vector<Tensor>& initial,
                                  std::vector<Tensor>& outputs) {
  std::vector<Tensor> state = initial;
  const int64_t last = batch_sizes.back();
  if (last < initial[0].size(0))
    for (Tensor& s : state) s = s.narrow(0, 0, last);
  for (size_t t = batch_sizes.size(); t-- > 0;) {
    const int64_t active = batch_sizes[t], rows = state[0].size(0);
    if (active > rows)
      for (size_t s = 0; s < state.size(); ++s)
        state[s] = cat({state[s], initial[s].narrow(0, rows, active - rows)}, 0);
    state = step(projected.narrow(0, offsets[t], active), state);
    outputs[t] = state[0];
  }
  return state;
}

}  // namespace

std::tuple<Tensor, std::vector<Tensor>> RNNBaseImpl::run_layers(const Tensor& data,
                                                                const std::vector<int64_t>& batch_sizes,
                                                                const std::vector<Tensor>& states) const {
  const int64_t D = num_directions();
  std::vector<int64_t> offsets(batch_sizes.size());  // the first row of each step
  std::exclusive_scan(batch_sizes.begin(), batch_sizes.end(), offsets.begin(), int64_t{0});
  std::vector<std::vector<Tensor>> finals(states.size());
  Tensor layer_input = data;
  for (int64_t layer = 0; layer < options_.num_layers; ++layer) {
    std::vector<Tensor> outputs;
    for (int64_t direction = 0; direction < D; ++direction) {
      const LayerWeights& w = weights(layer, direction);
      const Tensor projected = linear(layer_input, w.weight_ih, w.bias_ih);  // [rows, gates * H]
      const Step step = [&](const Tensor& step_input, const std::vector<Tensor>& state) {
        return detail::recurrent_step(kind_, options_.nonlinearity, step_input, state, w.weight_hh, w.bias_hh,
                                      w.weight_hr);
      };
      std::vector<Tensor> initial;
      for (const Tensor& all : states) initial.push_back(all.select(0, layer * D + direction));
      std::vector<Tensor> steps(batch_sizes.size());
      const std::vector<Tensor> final_state =
          direction == 0 ? walk_forward(step, projected, batch_sizes, offsets, initial, steps)
                         : walk_backward(step, projected, batch_sizes, offsets, initial, steps);
      outputs.push_back(steps.size() == 1 ? steps[0] : cat(steps, 0));
      for (size_t s = 0; s < final_state.size(); ++s) finals[s].push_back(final_state[s]);
    }
    layer_input = D == 2 ? cat(outputs, 1) : outputs[0];
    // training_for_forward: a compiled step recompiles when the mode changes, as for nn::Dropout.
    if (options_.dropout > 0.0 && layer + 1 < options_.num_layers && training_for_forward(*this))
      layer_input = dropout(layer_input, options_.dropout, true);
  }
  std::vector<Tensor> final_states;
  for (const std::vector<Tensor>& per_layer : finals) final_states.push_back(stack(per_layer, 0));
  return {layer_input, final_states};
}

}  // namespace ember::nn
