// nn::RNN, nn::LSTM and nn::GRU: PyTorch's parameters and checks, and the padded and packed inputs
// and states brought to the one layer loop (rnn_layers.cpp).
#include "runtime/nn/modules/rnn.h"

#include "runtime/functional.h"
#include "runtime/nn/modules/rnn_steps.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace {

int64_t gate_count(RNNKind kind) { return kind == RNNKind::LSTM ? 4 : kind == RNNKind::GRU ? 3 : 1; }

// The user's state [layers * directions, N, H] ([layers * directions, H] unbatched) as
// [layers * directions, N, H]; zeros when undefined.
Tensor prepare_state(const char* module, const char* name, const Tensor& state, bool batched, const Dims& expected,
                     const Tensor& like) {
  if (!state.defined()) return zeros(expected, {.dtype = like.dtype(), .device = like.device()});
  check(state.dim() == (batched ? 3 : 2), "{}: for {} input, {} should also be {}-D but got a {}-D tensor of shape {}",
        module, batched ? "batched 3-D" : "unbatched 2-D", name, batched ? 3 : 2, state.dim(), state.sizes());
  const Tensor shaped = batched ? state : state.unsqueeze(1);
  check(shaped.sizes() == expected, "{}: expected {} of size {}, got {}", module, name,
        batched ? expected : Dims{expected[0], expected[2]}, state.sizes());
  return shaped;
}

}  // namespace

RNNBaseImpl::RNNBaseImpl(std::string name, RNNKind kind, int64_t input_size, int64_t hidden_size, RNNOptions options,
                         Where where)
    : Module(name), kind_(kind), input_size_(input_size), hidden_size_(hidden_size), options_(options) {
  CallSiteScope site(where);
  check(input_size >= 0, "{}: input_size must be non-negative, got {}", name, input_size);
  check(hidden_size > 0, "{}: hidden_size must be greater than zero, got {}", name, hidden_size);
  check(options.num_layers > 0, "{}: num_layers must be greater than zero, got {}", name, options.num_layers);
  check(options.dropout >= 0.0 && options.dropout <= 1.0,
        "{}: dropout should be a number in range [0, 1] representing the probability of an element being zeroed, "
        "got {}",
        name, options.dropout);
  // PyTorch 2.3's order of checks: RNN and GRU refuse proj_size before RNNBase looks at its value.
  check(kind == RNNKind::LSTM || options.proj_size == 0,
        "{}: proj_size argument is only supported for LSTM, not RNN or GRU (got proj_size={})", name,
        options.proj_size);
  check(options.proj_size >= 0, "{}: proj_size should be a positive integer or zero to disable projections, got {}",
        name, options.proj_size);
  check(options.proj_size < hidden_size, "{}: proj_size has to be smaller than hidden_size, got proj_size={} >= {}",
        name, options.proj_size, hidden_size);
  const int64_t gates = gate_count(kind) * hidden_size, state = state_size();
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  for (int64_t layer = 0; layer < options.num_layers; ++layer)
    for (int64_t direction = 0; direction < num_directions(); ++direction) {
      const int64_t layer_input = layer == 0 ? input_size : state * num_directions();
      const std::string suffix = fmt::format("_l{}{}", layer, direction == 1 ? "_reverse" : "");
      LayerWeights w;
      w.weight_ih = register_parameter("weight_ih" + suffix, empty({gates, layer_input}, tensor_options));
      w.weight_hh = register_parameter("weight_hh" + suffix, empty({gates, state}, tensor_options));
      if (options.bias) {
        w.bias_ih = register_parameter("bias_ih" + suffix, empty({gates}, tensor_options));
        w.bias_hh = register_parameter("bias_hh" + suffix, empty({gates}, tensor_options));
      }
      // After bias_hh, PyTorch's order (its _flat_weights and state_dict follow it).
      if (options.proj_size > 0)
        w.weight_hr = register_parameter("weight_hr" + suffix, empty({options.proj_size, hidden_size}, tensor_options));
      weights_.push_back(w);
    }
  reset_parameters(options.generator);
  options_.generator = nullptr;  // used while building only: not kept, so it is never read after it is gone
}

void RNNBaseImpl::reset_parameters(Generator* generator) {
  detail::draw_recurrent_weights(parameters(), hidden_size_, generator);
}

std::tuple<Tensor, std::vector<Tensor>> RNNBaseImpl::run(const Tensor& input, std::vector<Tensor> states) const {
  const std::string& module = name();
  check(input.defined() && (input.dim() == 2 || input.dim() == 3),
        "{}: expected input to be 2-D (unbatched) or 3-D, got {}", module,
        input.defined() ? fmt::format("{}-D of shape {}", input.dim(), input.sizes()) : "an undefined tensor");
  const bool batched = input.dim() == 3;
  const Tensor x = !batched ? input.unsqueeze(1) : options_.batch_first ? input.transpose(0, 1) : input;
  check(x.size(2) == input_size_, "{}: input.size(-1) must be equal to input_size; expected {}, got {}", module,
        input_size_, x.size(2));
  const int64_t L = x.size(0), N = x.size(1), D = num_directions();
  check(L > 0, "{}: expected sequence length to be larger than 0, got input of shape {}", module, input.sizes());
  // h is state_size() wide (proj_size with a projection), an LSTM's c hidden_size.
  for (size_t s = 0; s < states.size(); ++s)
    states[s] = prepare_state(module.c_str(), s == 0 ? "hx" : "cx", states[s], batched,
                              {options_.num_layers * D, N, s == 0 ? state_size() : hidden_size_}, x);

  // [L, N, in] is the packed layout of N sequences of L steps: batch_sizes all N.
  const std::vector<int64_t> batch_sizes(static_cast<size_t>(L), N);
  auto [data, final_states] = run_layers(x.reshape({L * N, input_size_}), batch_sizes, states);
  const Tensor sequence = data.reshape({L, N, data.size(1)});
  const Tensor output = !batched ? sequence.squeeze(1) : options_.batch_first ? sequence.transpose(0, 1) : sequence;
  if (!batched)
    for (Tensor& state : final_states) state = state.squeeze(1);
  return {output, final_states};
}

std::tuple<utils::rnn::PackedSequence, std::vector<Tensor>> RNNBaseImpl::run(const utils::rnn::PackedSequence& input,
                                                                             std::vector<Tensor> states) const {
  const std::string& module = name();
  const std::vector<int64_t> batch_sizes = utils::rnn::detail::checked_batch_sizes(input, module.c_str());
  const Tensor& data = input.data;
  check(data.dim() == 2, "{}: input must have 2 dimensions, got {} (a PackedSequence's data [rows, input_size])",
        module, data.dim());
  check(data.size(1) == input_size_, "{}: input.size(-1) must be equal to input_size; expected {}, got {}", module,
        input_size_, data.size(1));
  const int64_t batch = batch_sizes[0];
  for (size_t s = 0; s < states.size(); ++s) {
    const bool given = states[s].defined();
    const Dims shape{options_.num_layers * num_directions(), batch, s == 0 ? state_size() : hidden_size_};
    states[s] = prepare_state(module.c_str(), s == 0 ? "hx" : "cx", states[s], true, shape, data);
    // The user's states are in the original batch order, the packed rows longest first.
    if (given && input.sorted_indices.defined()) states[s] = index_select(states[s], 1, input.sorted_indices);
  }
  auto [output, final_states] = run_layers(data, batch_sizes, states);
  if (input.unsorted_indices.defined())
    for (Tensor& state : final_states) state = index_select(state, 1, input.unsorted_indices);
  return {utils::rnn::PackedSequence{output, input.batch_sizes, input.sorted_indices, input.unsorted_indices},
          final_states};
}

// PyTorch's RNNBase.extra_repr: the settings that differ from the defaults (never the
// nonlinearity, which PyTorch's RNN does not print).
std::string RNNBaseImpl::extra_repr() const {
  std::string text = fmt::format("{}, {}", input_size_, hidden_size_);
  if (options_.proj_size != 0) text += fmt::format(", proj_size={}", options_.proj_size);
  if (options_.num_layers != 1) text += fmt::format(", num_layers={}", options_.num_layers);
  if (!options_.bias) text += ", bias=False";
  if (options_.batch_first) text += ", batch_first=True";
  if (options_.dropout != 0.0) text += fmt::format(", dropout={}", python_float(options_.dropout));
  if (options_.bidirectional) text += ", bidirectional=True";
  return text;
}

RNNImpl::RNNImpl(int64_t input_size, int64_t hidden_size, RNNOptions options, Where where)
    : RNNBaseImpl("RNN", RNNKind::RNN, input_size, hidden_size, options, where) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, const Tensor& hx, Where where) {
  CallSiteScope site(where);
  auto [output, states] = run(input, {hx});
  return {output, states[0]};
}

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward(const utils::rnn::PackedSequence& input,
                                                                const Tensor& hx, Where where) {
  CallSiteScope site(where);
  auto [output, states] = run(input, {hx});
  return {output, states[0]};
}

LSTMImpl::LSTMImpl(int64_t input_size, int64_t hidden_size, RNNOptions options, Where where)
    : RNNBaseImpl("LSTM", RNNKind::LSTM, input_size, hidden_size, options, where) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx,
                                                                 Where where) {
  CallSiteScope site(where);
  auto [output, states] = run(
      input, hx ? std::vector<Tensor>{std::get<0>(*hx), std::get<1>(*hx)} : std::vector<Tensor>{Tensor{}, Tensor{}});
  return {output, {states[0], states[1]}};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward(
    const utils::rnn::PackedSequence& input, std::optional<std::tuple<Tensor, Tensor>> hx, Where where) {
  CallSiteScope site(where);
  auto [output, states] = run(
      input, hx ? std::vector<Tensor>{std::get<0>(*hx), std::get<1>(*hx)} : std::vector<Tensor>{Tensor{}, Tensor{}});
  return {output, {states[0], states[1]}};
}

GRUImpl::GRUImpl(int64_t input_size, int64_t hidden_size, RNNOptions options, Where where)
    : RNNBaseImpl("GRU", RNNKind::GRU, input_size, hidden_size, options, where) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, const Tensor& hx, Where where) {
  CallSiteScope site(where);
  auto [output, states] = run(input, {hx});
  return {output, states[0]};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward(const utils::rnn::PackedSequence& input,
                                                                const Tensor& hx, Where where) {
  CallSiteScope site(where);
  auto [output, states] = run(input, {hx});
  return {output, states[0]};
}

}  // namespace ember::nn
