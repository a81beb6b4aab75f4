// nn::init: the initialisers. Random draws go through the registry's rand/randn ops with the
// chosen generator's stream position, so they run on the tensor's device and are reproducible.
#include "runtime/nn/init.h"

#include <cmath>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::nn::init {

namespace {

// Draws U[0, 1) ("rand") or N(0, 1) ("randn") in float64, shaped like `like`, from `generator`.
// float64 keeps the affine rescaling exact before the one rounding into the tensor's dtype.
Tensor draw(const char* op_name, const Tensor& like, Generator* generator) {
  const OpDef& op = lookup_op(op_name);
  Generator& source = generator != nullptr ? *generator : default_generator(like.device());
  // The rand/randn kernels read two 32-bit words per element.
  const GeneratorState at = source.reserve(2 * static_cast<uint64_t>(like.numel()));
  const Attrs attrs{{"sizes", like.sizes()},
                    {"dtype", kFloat64},
                    {"device", like.device()},
                    {"seed", static_cast<int64_t>(at.seed)},
                    {"offset", static_cast<int64_t>(at.offset)}};
  return dispatch_one(op, {}, attrs);
}

void check_floating(const Tensor& tensor, const char* function) {
  check(tensor.defined(), "nn::init::{}: undefined tensor", function);
  check(tensor.is_floating_point(), "nn::init::{}: expected a floating-point tensor, got {}", function,
        tensor.dtype());
}

// Writes `values` into `tensor` without recording autograd (parameters are leaves that require grad).
Tensor assign(Tensor tensor, const Tensor& values) {
  NoGradGuard no_grad;
  tensor.copy_(values);
  return tensor;
}

int64_t fan_for(const Tensor& tensor, FanMode mode) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == FanMode::FanIn ? fan_in : fan_out;
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Sigmoid: return 1.0;
    case Nonlinearity::Tanh: return 5.0 / 3.0;
    case Nonlinearity::ReLU: return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU: return std::sqrt(2.0 / (1.0 + param * param));
    case Nonlinearity::SELU: return 3.0 / 4.0;  // PyTorch's value, for self-normalising networks
  }
  internal_assert(false, "unknown nonlinearity");
  return 1.0;
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  check(tensor.defined() && tensor.dim() >= 2,
        "nn::init: fan in and fan out need a tensor with at least 2 dims, got shape {}",
        tensor.defined() ? tensor.sizes() : Dims{});
  int64_t receptive_field = 1;
  for (int d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.sizes()[d];
  return {tensor.sizes()[1] * receptive_field, tensor.sizes()[0] * receptive_field};
}

Tensor uniform_(Tensor tensor, double low, double high, Generator* generator) {
  check_floating(tensor, "uniform_");
  check(low <= high, "nn::init::uniform_: low ({}) must not exceed high ({})", low, high);
  return assign(tensor, add(mul(draw("rand", tensor, generator), high - low), low));
}

Tensor normal_(Tensor tensor, double mean, double std, Generator* generator) {
  check_floating(tensor, "normal_");
  check(std >= 0.0, "nn::init::normal_: std must be non-negative, got {}", std);
  return assign(tensor, add(mul(draw("randn", tensor, generator), std), mean));
}

Tensor constant_(Tensor tensor, double value) {
  check(tensor.defined(), "nn::init::constant_: undefined tensor");
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}
Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0.0); }
Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1.0); }

Tensor xavier_uniform_(Tensor tensor, double gain, Generator* generator) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(std::move(tensor), -bound, bound, generator);
}

Tensor xavier_normal_(Tensor tensor, double gain, Generator* generator) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(std::move(tensor), 0.0, std, generator);
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator* generator) {
  const int64_t fan = fan_for(tensor, mode);
  check(fan > 0, "nn::init::kaiming_uniform_: zero fan for a tensor of shape {}", tensor.sizes());
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return uniform_(std::move(tensor), -bound, bound, generator);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator* generator) {
  const int64_t fan = fan_for(tensor, mode);
  check(fan > 0, "nn::init::kaiming_normal_: zero fan for a tensor of shape {}", tensor.sizes());
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return normal_(std::move(tensor), 0.0, std, generator);
}

}  // namespace ember::nn::init
