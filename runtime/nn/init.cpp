// nn::init: the initialisers. Random draws go through the registry's rand/randn ops with the
// chosen generator's stream position, so they run on the tensor's device and are reproducible.
// Each public function validates under its own name, then fills through the helpers below.
#include "runtime/nn/init.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

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

// The random initialisers draw a value per element: into an expanded tensor, whose elements share
// addresses, the last draw written would win (PyTorch refuses it too).
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

// numeric_limits<T>::max() of a floating dtype.
double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::Float64: return std::numeric_limits<double>::max();
    case DType::Float32: return std::numeric_limits<float>::max();
    case DType::BFloat16: return 0x1.fep127;  // (2 - 2^-7) * 2^127
    case DType::Float16: return 65504.0;      // (2 - 2^-10) * 2^15
    default: break;
  }
  internal_assert(false, "largest_finite: not a floating dtype");
  return 0.0;
}

// The next value of T toward -inf.
template <typename T>
T next_below(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nextafter(value, -std::numeric_limits<T>::infinity());
  } else {  // a 16-bit float: sign and magnitude bits, so one step of the bits is one value
    T result = value;
    if (value.bits == 0) {
      result.bits = 0x8001;  // below +0: the smallest negative subnormal
    } else {
      result.bits = static_cast<uint16_t>((value.bits & 0x8000) != 0 ? value.bits + 1 : value.bits - 1);
    }
    return result;
  }
}

// The largest value of `dtype` below `high`, a finite value within the dtype's range.
double largest_below(double high, DType dtype) {
  return dispatch_floating(dtype, "nn::init::uniform_", [&](auto zero) {
    using T = decltype(zero);
    const auto as_double = [](T value) { return static_cast<double>(static_cast<compute_t<T>>(value)); };
    // Through float a 16-bit value may round twice, but it still lands on a neighbour of high.
    const T nearest = static_cast<T>(static_cast<compute_t<T>>(high));
    return as_double(nearest) < high ? as_double(nearest) : as_double(next_below(nearest));
  });
}

Tensor fill_uniform(Tensor tensor, double low, double high, Generator* generator, const char* function) {
  check_floating(tensor, function);
  const DType dtype = tensor.dtype();
  const double largest = largest_finite(dtype);
  // PyTorch's bounds: whatever is drawn is a finite value of the dtype.
  check(std::abs(low) <= largest && std::abs(high) <= largest,
        "nn::init::{}: low ({}) and high ({}) must be finite values of {} (at most {} in magnitude)", function, low,
        high, dtype, largest);
  check(low <= high, "nn::init::{}: low ({}) must not exceed high ({})", function, low, high);
  check(high - low <= largest, "nn::init::{}: high - low ({}) exceeds the largest {} ({})", function, high - low,
        dtype, largest);
  if (tensor.numel() == 0) return tensor;
  // U[0, 1) is drawn in the tensor's dtype, with as many random bits as it holds (ember's rand,
  // PyTorch's uniform_real), and rescaled in float64. A value just under high may still round up
  // to high in the dtype, so the values stop at the largest one below it (at low when no value of
  // the dtype lies in [low, high)).
  const Tensor unit = draw("rand", tensor, dtype, generator).to(kFloat64);
  const double top = std::max(largest_below(high, dtype), low);
  return assign(tensor, clamp(add(mul(unit, high - low), low), std::nullopt, top));
}

Tensor fill_normal(Tensor tensor, double mean, double std, Generator* generator, const char* function) {
  check_floating(tensor, function);
  check(std >= 0.0, "nn::init::{}: std must be non-negative, got {}", function, std);
  if (tensor.numel() == 0) return tensor;
  // float64 keeps the affine rescaling exact before the one rounding into the tensor's dtype.
  return assign(tensor, add(mul(draw("randn", tensor, kFloat64, generator), std), mean));
}

// As torch.nn.init's, through fill_, which also writes an expanded tensor (one value everywhere).
Tensor fill_constant(Tensor tensor, double value, const char* function) {
  check(tensor.defined(), "nn::init::{}: undefined tensor", function);
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

// xavier_* compute the fans first, as PyTorch's do: a 1-D tensor is refused even when empty, and
// a fan sum of 0 (where PyTorch divides by zero) too; other zero-element tensors are left as they are.
// Only kaiming_* return a zero-element tensor before the fans ("Initializing zero-element tensors
// is a no-op").
Tensor xavier_uniform_(Tensor tensor, double gain, Generator* generator, Where where) {
  CallSiteScope site(where);
  check_floating(tensor, "xavier_uniform_");
  const auto [fan_in, fan_out] = fans(tensor, "xavier_uniform_");
  check(fan_in + fan_out > 0, "nn::init::xavier_uniform_: fan_in + fan_out is 0 for shape {}", tensor.sizes());
  if (tensor.numel() == 0) return tensor;
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return fill_uniform(std::move(tensor), -bound, bound, generator, "xavier_uniform_");
}

Tensor xavier_normal_(Tensor tensor, double gain, Generator* generator, Where where) {
  CallSiteScope site(where);
  check_floating(tensor, "xavier_normal_");
  const auto [fan_in, fan_out] = fans(tensor, "xavier_normal_");
  check(fan_in + fan_out > 0, "nn::init::xavier_normal_: fan_in + fan_out is 0 for shape {}", tensor.sizes());
  if (tensor.numel() == 0) return tensor;
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
