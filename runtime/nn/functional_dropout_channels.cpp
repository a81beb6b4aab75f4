// The channel dropouts and alpha dropouts of nn::functional (functional_layers_more.h), following
// ATen's _dropout_impl: a Bernoulli(1 - p) keep mask, drawn per element or per (sample, channel)
// from rand (the default generator's Philox stream), then scaled.
#include <cmath>
#include <string>

#include "runtime/nn/functional_layers_more.h"

namespace ember::nn::functional {

namespace {

// SELU's scale * alpha: the value SELU tends to at -inf is -kSeluAlpha.
constexpr double kSeluAlpha = 1.7580993408473766;

void check_probability(const char* function, double p) {
  check(p >= 0.0 && p <= 1.0, "{}: dropout probability has to be between 0 and 1, but got {}", function, p);
}

// 1 where an element (or channel) is kept, with probability 1 - p, else 0, in the input's dtype.
// A channel mask is [N, C, 1, ...] (ATen's make_feature_noise), one draw per (sample, channel).
Tensor keep_mask(const Tensor& input, double p, bool per_channel, const char* function) {
  Dims shape = input.sizes();
  if (per_channel) {
    check(input.dim() >= 2, "{}: Feature dropout requires at least 2 dimensions in the input, got shape {}", function,
          input.sizes());
    for (int d = 2; d < input.dim(); ++d) shape[d] = 1;
  }
  // 16-bit draws would round 1 - p; the comparison is made in float32 there.
  const DType draw_dtype = input.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const Tensor uniform = rand(shape, {.dtype = draw_dtype, .device = input.device()});
  const Tensor threshold = full({}, 1.0 - p, {.dtype = draw_dtype, .device = input.device()});
  return to_dtype(lt(uniform, threshold), input.dtype());
}

// ATen's _dropout_impl for the plain and the alpha form, per element or per channel.
Tensor dropout_impl(const Tensor& input, double p, bool training, bool per_channel, bool alpha, const char* function) {
  check(input.defined(), "{}: the input must be defined", function);
  check_probability(function, p);
  if (p == 0.0 || !training || input.numel() == 0) return input;
  check(input.is_floating_point(), "{}: expected a floating-point input, got dtype {}", function, input.dtype());
  if (p == 1.0) return mul(input, zeros_like(input));
  const Tensor keep = keep_mask(input, p, per_channel, function);
  if (!alpha) return mul(input, mul(keep, 1.0 / (1.0 - p)));
  const double a = 1.0 / std::sqrt((kSeluAlpha * kSeluAlpha * p + 1.0) * (1.0 - p));
  // b = alpha a (keep - 1) + alpha a p: where kept, alpha a p; where dropped, alpha a (p - 1).
  const Tensor shift = add(mul(keep, kSeluAlpha * a), kSeluAlpha * a * (p - 1.0));
  return add(mul(input, mul(keep, a)), shift);
}

// Runs `function` on the input with a batch dim of 1 added, for the unbatched forms.
Tensor unbatched(const Tensor& input, double p, bool training, const char* function) {
  return dropout_impl(input.unsqueeze(0), p, training, /*per_channel=*/true, /*alpha=*/false, function).squeeze(0);
}

}  // namespace

Tensor feature_dropout(const Tensor& input, double p, bool training, Where where) {
  CallSiteScope site(where);
  return dropout_impl(input, p, training, /*per_channel=*/true, /*alpha=*/false, "feature_dropout");
}

Tensor dropout1d(const Tensor& input, double p, bool training, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "dropout1d: the input must be defined");
  check_probability("dropout1d", p);
  check(input.dim() == 2 || input.dim() == 3,
        "dropout1d: Expected 2D or 3D input, but received a {}D input of shape {}. dropout1d drops whole channels of "
        "inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (2D or 3D inputs)",
        input.dim(), input.sizes());
  if (input.dim() == 2) return unbatched(input, p, training, "dropout1d");
  return dropout_impl(input, p, training, true, false, "dropout1d");
}

Tensor dropout2d(const Tensor& input, double p, bool training, Where where) {
  CallSiteScope site(where);
  // PyTorch only warns about ranks other than 3 and 4, and reads a 3-D input as [N, C, L]
  // (pytorch/pytorch#77081); ember keeps the behaviour without the warnings.
  return dropout_impl(input, p, training, true, false, "dropout2d");
}

Tensor dropout3d(const Tensor& input, double p, bool training, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "dropout3d: the input must be defined");
  check_probability("dropout3d", p);
  // As PyTorch's: only a 5-D input is batched; any other rank (4-D [C, D, H, W] and, where PyTorch
  // warns, the rest) gets a batch dim of 1 for the draw.
  if (input.dim() != 5) return unbatched(input, p, training, "dropout3d");
  return dropout_impl(input, p, training, true, false, "dropout3d");
}

Tensor alpha_dropout(const Tensor& input, double p, bool training, Where where) {
  CallSiteScope site(where);
  return dropout_impl(input, p, training, /*per_channel=*/false, /*alpha=*/true, "alpha_dropout");
}

Tensor feature_alpha_dropout(const Tensor& input, double p, bool training, Where where) {
  CallSiteScope site(where);
  return dropout_impl(input, p, training, /*per_channel=*/true, /*alpha=*/true, "feature_alpha_dropout");
}

}  // namespace ember::nn::functional
