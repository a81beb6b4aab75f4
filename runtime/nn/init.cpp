// nn::init: the initialisers. Random draws go through the registry's rand/randn ops with the
// chosen generator's stream position, so they run on the tensor's device and are reproducible.
// Each public function validates under its own name, then fills through the helpers below.
#include "runtime/nn/init.h"

#include <cmath>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/memory/overlap.h"

namespace ember::nn::init {

namespace {

// Draws U[0, 1) ("rand") or N(0, 1) ("randn") in `dtype`, shaped like `like`, from `generator`.
Tensor draw(const char* op_name, const Tensor& like, DType dtype, Generator* generator) {
  const OpDef& op = lookup_op(op_name);
  Generator& source = generator != nullptr ? *generator : default_generator(like.device());
  // The rand/randn kernels read two 32-bit words per element.
  const GeneratorState at = source.reserve(2 * static_cast<uint64_t>(like.numel()));
  const Attrs attrs{{"sizes", like.sizes()},
                    {"dtype", dtype},
                    {"device", like.device()},
                    {"seed", static_cast<int64_t>(at.seed)},
                    {"offset", static_cast<int64_t>(at.offset)}};
  return dispatch_one(op, {}, attrs);
}

void check_writable(const Tensor& tensor, const char* function) {
  check(tensor.defined(), "nn::init::{}: undefined tensor", function);
  check(!has_internal_overlap(tensor),
        "nn::init::{}: the tensor (shape {}, strides {}) is expanded: several of its elements share one "
        "address; clone() it first", function, tensor.sizes(), tensor.strides());
}

void check_floating(const Tensor& tensor, const char* function) {
  check_writable(tensor, function);
  check(tensor.is_floating_point(), "nn::init::{}: expected a floating-point tensor, got {}", function,
        tensor.dtype());
}

// Writes `values` into `tensor` without recording autograd (parameters are leaves that require grad).
Tensor assign(Tensor tensor, const Tensor& values) {
  NoGradGuard no_grad;
  tensor.copy_(values);
  return tensor;
}

std::pair<int64_t, int64_t> fans(const Tensor& tensor, const char* function) {
  check(tensor.dim() >= 2, "nn::init::{}: fan in and fan out need a tensor with at least 2 dims, got shape {}",
        function, tensor.sizes());
  int64_t receptive_field = 1;
  for (int d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.sizes()[d];
  return {tensor.sizes()[1] * receptive_field, tensor.sizes()[0] * receptive_field};
}

int64_t fan_for(const Tensor& tensor, FanMode mode, const char* function) {
  const auto [fan_in, fan_out] = fans(tensor, function);
  return mode == FanMode::FanIn ? fan_in : fan_out;
}

Tensor fill_uniform(Tensor tensor, double low, double high, Generator* generator, const char* function) {
  check_floating(tensor, function);
  check(low <= high, "nn::init::{}: low ({}) must not exceed high ({})", function, low, high);
  if (tensor.numel() == 0) return tensor;
  // float64 keeps the affine rescaling exact before the one rounding into the tensor's dtype.
  return assign(tensor, add(mul(draw("rand", tensor, kFloat64, generator), high - low), low));
}

Tensor fill_normal(Tensor tensor, double mean, double std, Generator* generator, const char* function) {
  check_floating(tensor, function);
  check(std >= 0.0, "nn::init::{}: std must be non-negative, got {}", function, std);
  if (tensor.numel() == 0) return tensor;
  // float64 keeps the affine rescaling exact before the one rounding into the tensor's dtype.
  return assign(tensor, add(mul(draw("randn", tensor, kFloat64, generator), std), mean));
}

Tensor fill_constant(Tensor tensor, double value, const char* function) {
  check_writable(tensor, function);
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
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

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor, Where where) {
  CallSiteScope site(where);
  check(tensor.defined(), "nn::init::calculate_fan_in_and_fan_out: undefined tensor");
  return fans(tensor, "calculate_fan_in_and_fan_out");
}

Tensor uniform_(Tensor tensor, double low, double high, Generator* generator, Where where) {
  CallSiteScope site(where);
  return fill_uniform(std::move(tensor), low, high, generator, "uniform_");
}

Tensor normal_(Tensor tensor, double mean, double std, Generator* generator, Where where) {
  CallSiteScope site(where);
  return fill_normal(std::move(tensor), mean, std, generator, "normal_");
}

Tensor constant_(Tensor tensor, double value, Where where) {
  CallSiteScope site(where);
  return fill_constant(std::move(tensor), value, "constant_");
}
Tensor zeros_(Tensor tensor, Where where) {
  CallSiteScope site(where);
  return fill_constant(std::move(tensor), 0.0, "zeros_");
}
Tensor ones_(Tensor tensor, Where where) {
  CallSiteScope site(where);
  return fill_constant(std::move(tensor), 1.0, "ones_");
}

// The fan-based initialisers return a zero-element tensor untouched before looking at its fans,
// as PyTorch's do ("Initializing zero-element tensors is a no-op").
Tensor xavier_uniform_(Tensor tensor, double gain, Generator* generator, Where where) {
  CallSiteScope site(where);
  check_floating(tensor, "xavier_uniform_");
  if (tensor.numel() == 0) return tensor;
  const auto [fan_in, fan_out] = fans(tensor, "xavier_uniform_");
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return fill_uniform(std::move(tensor), -bound, bound, generator, "xavier_uniform_");
}

Tensor xavier_normal_(Tensor tensor, double gain, Generator* generator, Where where) {
  CallSiteScope site(where);
  check_floating(tensor, "xavier_normal_");
  if (tensor.numel() == 0) return tensor;
  const auto [fan_in, fan_out] = fans(tensor, "xavier_normal_");
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return fill_normal(std::move(tensor), 0.0, std, generator, "xavier_normal_");
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator* generator,
                        Where where) {
  CallSiteScope site(where);
  check_floating(tensor, "kaiming_uniform_");
  if (tensor.numel() == 0) return tensor;
  const int64_t fan = fan_for(tensor, mode, "kaiming_uniform_");
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return fill_uniform(std::move(tensor), -bound, bound, generator, "kaiming_uniform_");
}

Tensor kaiming_normal_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator* generator,
                       Where where) {
  CallSiteScope site(where);
  check_floating(tensor, "kaiming_normal_");
  if (tensor.numel() == 0) return tensor;
  const int64_t fan = fan_for(tensor, mode, "kaiming_normal_");
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return fill_normal(std::move(tensor), 0.0, std, generator, "kaiming_normal_");
}

}  // namespace ember::nn::init
