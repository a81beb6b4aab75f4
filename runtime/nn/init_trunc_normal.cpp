// nn::init::trunc_normal_ (torch.nn.init.trunc_normal_): inverse-CDF sampling of a truncated
// normal, with erfinv as a composite of registry ops, so the draw runs on the tensor's device.
#include <cmath>
#include <numbers>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/memory/overlap.h"
#include "runtime/nn/init.h"

namespace ember::nn::init {

namespace {

// The standard normal's CDF.
double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)); }

// erfinv(y) for float64 y in [-1, 1] (+-inf at +-1). Winitzki's closed form (a = 0.147, relative
// error below 2e-3 everywhere) starts Newton's method on erfc(z) = 1 - |y|, which converges
// quadratically to full float64 accuracy in four steps; erfc rather than erf keeps 1 - |y|
// accurate in the tails, where erf(z) rounds to 1.
Tensor erfinv(const Tensor& y) {
  constexpr double a = 0.147;
  const double c = 2.0 / (std::numbers::pi * a);
  const Tensor magnitude = abs(y);
  const Tensor log_term = log1p(neg(mul(magnitude, magnitude)));  // ln(1 - y^2), <= 0
  const Tensor centre = add(mul(log_term, 0.5), c);
  const Tensor root = sqrt(sub(mul(centre, centre), mul(log_term, 1.0 / a)));
  Tensor z = sqrt(clamp(sub(root, centre), 0.0, std::nullopt));
  const Tensor tail = rsub(magnitude, 1.0);  // 1 - |y|, exact for |y| >= 1/2
  for (int step = 0; step < 4; ++step) {
    // z -= f / f' with f = erfc(z) - (1 - |y|), f' = -2 / sqrt(pi) exp(-z^2).
    const Tensor residual = sub(erfc(z), tail);
    z = add(z, mul(mul(residual, exp(mul(z, z))), std::sqrt(std::numbers::pi) / 2.0));
  }
  const Tensor infinite = full_like(z, std::numeric_limits<double>::infinity());
  z = where(ge(magnitude, ones_like(magnitude)), infinite, z);
  return mul(sign(y), z);
}

}  // namespace

Tensor trunc_normal_(Tensor tensor, double mean, double std, double a, double b, Generator* generator, Where where) {
  CallSiteScope site(where);
  check(tensor.defined(), "nn::init::trunc_normal_: undefined tensor");
  check(!has_internal_overlap(tensor),
        "nn::init::trunc_normal_: the tensor (shape {}, strides {}) is expanded: several of its elements share one "
        "address; clone() it first",
        tensor.sizes(), tensor.strides());
  check(tensor.is_floating_point(), "nn::init::trunc_normal_: expected a floating-point tensor, got {}",
        tensor.dtype());
  check(std::isfinite(mean), "nn::init::trunc_normal_: mean must be finite, got {}", mean);
  // PyTorch divides by std (0 raises) and a negative one reverses the uniform's bounds (which raises).
  check(std > 0.0 && std::isfinite(std), "nn::init::trunc_normal_: std must be positive and finite, got {}", std);
  check(a <= b, "nn::init::trunc_normal_: the bounds must satisfy a <= b, got a={} b={}", a, b);
  if (tensor.numel() == 0) return tensor;
  NoGradGuard no_grad;
  const double low = 2.0 * normal_cdf((a - mean) / std) - 1.0;
  const double high = 2.0 * normal_cdf((b - mean) / std) - 1.0;
  Tensor uniform = empty(tensor.sizes(), {.dtype = kFloat64, .device = tensor.device()});
  uniform_(uniform, low, high, generator);
  const Tensor normal = add(mul(erfinv(uniform), std * std::numbers::sqrt2), mean);
  // Infinite bounds clamp nothing (a clamp attribute must be finite).
  const Tensor clamped = clamp(normal, std::isfinite(a) ? std::optional<double>(a) : std::nullopt,
                               std::isfinite(b) ? std::optional<double>(b) : std::nullopt);
  tensor.copy_(clamped);
  return tensor;
}

}  // namespace ember::nn::init
