// nn::RNNCell, nn::LSTMCell and nn::GRUCell: one step of the recurrent formulas (rnn_steps.cpp)
// with PyTorch's parameters, initialisation, checks and unbatched ([features]) inputs.
#include "runtime/functional.h"
#include "runtime/nn/modules/rnn.h"
#include "runtime/nn/modules/rnn_steps.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

RNNCellBaseImpl::RNNCellBaseImpl(std::string name, int64_t gates, int64_t input_size, int64_t hidden_size,
                                 RNNCellOptions options, Where where)
    : Module(name), input_size_(input_size), hidden_size_(hidden_size), options_(options) {
  CallSiteScope site(where);
  check(input_size >= 0, "{}: input_size must be non-negative, got {}", name, input_size);
  check(hidden_size >= 0, "{}: hidden_size must be non-negative, got {}", name, hidden_size);  // 0 is PyTorch's too
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  weight_ih = register_parameter("weight_ih", empty({gates * hidden_size, input_size}, tensor_options));
  weight_hh = register_parameter("weight_hh", empty({gates * hidden_size, hidden_size}, tensor_options));
  if (options.bias) {
    bias_ih = register_parameter("bias_ih", empty({gates * hidden_size}, tensor_options));
    bias_hh = register_parameter("bias_hh", empty({gates * hidden_size}, tensor_options));
  }
  reset_parameters(options.generator);
  options_.generator = nullptr;  // used while building only
}

void RNNCellBaseImpl::reset_parameters(Generator* generator) {
  detail::draw_recurrent_weights(parameters(), hidden_size_, generator);
}

bool RNNCellBaseImpl::batched(const Tensor& input, std::vector<Tensor*> states) const {
  check(input.defined() && (input.dim() == 1 || input.dim() == 2), "{}: expected input to be 1-D or 2-D, got {}",
        name(), input.defined() ? fmt::format("{}-D of shape {}", input.dim(), input.sizes()) : "an undefined tensor");
  const bool is_batched = input.dim() == 2;
  check(input.size(-1) == input_size_, "{}: input has inconsistent input_size: got {} expected {}", name(),
        input.size(-1), input_size_);
  const int64_t N = is_batched ? input.size(0) : 1;
  for (Tensor* state : states) {
    if (!state->defined()) {
      *state = zeros({N, hidden_size_}, {.dtype = input.dtype(), .device = input.device()});
      continue;
    }
    check(state->dim() == input.dim(), "{}: expected the hidden state to be {}-D as the input, got shape {}", name(),
          input.dim(), state->sizes());
    const Tensor shaped = is_batched ? *state : state->unsqueeze(0);
    check(shaped.size(0) == N && shaped.size(1) == hidden_size_,
          "{}: expected the hidden state of shape [{}, {}] (input batch, hidden_size), got {}", name(), N, hidden_size_,
          state->sizes());
    *state = shaped;
  }
  return is_batched;
}

std::string RNNCellBaseImpl::extra_repr() const {
  std::string text = fmt::format("{}, {}", input_size_, hidden_size_);
  if (!options_.bias) text += ", bias=False";
  if (name() == "RNNCell" && options_.nonlinearity == RNNNonlinearity::ReLU)
    text += ", nonlinearity=relu";  // PyTorch's format: unquoted
  return text;
}

RNNCellImpl::RNNCellImpl(int64_t input_size, int64_t hidden_size, RNNCellOptions options, Where where)
    : RNNCellBaseImpl("RNNCell", 1, input_size, hidden_size, options, where) {}

Tensor RNNCellImpl::forward(const Tensor& input, const Tensor& hx, Where where) {
  CallSiteScope site(where);
  Tensor h = hx;
  const bool is_batched = batched(input, {&h});
  const Tensor x = is_batched ? input : input.unsqueeze(0);
  const Tensor next = detail::recurrent_step(RNNKind::RNN, options().nonlinearity, linear(x, weight_ih, bias_ih), {h},
                                             weight_hh, bias_hh)[0];
  return is_batched ? next : next.squeeze(0);
}

LSTMCellImpl::LSTMCellImpl(int64_t input_size, int64_t hidden_size, RNNCellOptions options, Where where)
    : RNNCellBaseImpl("LSTMCell", 4, input_size, hidden_size, options, where) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx,
                                                 Where where) {
  CallSiteScope site(where);
  Tensor h = hx ? std::get<0>(*hx) : Tensor{}, c = hx ? std::get<1>(*hx) : Tensor{};
  const bool is_batched = batched(input, {&h, &c});
  const Tensor x = is_batched ? input : input.unsqueeze(0);
  const std::vector<Tensor> next = detail::recurrent_step(RNNKind::LSTM, RNNNonlinearity::Tanh,
                                                          linear(x, weight_ih, bias_ih), {h, c}, weight_hh, bias_hh);
  if (is_batched) return {next[0], next[1]};
  return {next[0].squeeze(0), next[1].squeeze(0)};
}

GRUCellImpl::GRUCellImpl(int64_t input_size, int64_t hidden_size, RNNCellOptions options, Where where)
    : RNNCellBaseImpl("GRUCell", 3, input_size, hidden_size, options, where) {}

Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx, Where where) {
  CallSiteScope site(where);
  Tensor h = hx;
  const bool is_batched = batched(input, {&h});
  const Tensor x = is_batched ? input : input.unsqueeze(0);
  const Tensor next = detail::recurrent_step(RNNKind::GRU, RNNNonlinearity::Tanh, linear(x, weight_ih, bias_ih), {h},
                                             weight_hh, bias_hh)[0];
  return is_batched ? next : next.squeeze(0);
}

}  // namespace ember::nn
