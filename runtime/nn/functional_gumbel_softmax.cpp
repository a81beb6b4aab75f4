// F::gumbel_softmax (functional_activations_more.h): PyTorch's composite, with the Gumbel noise
// drawn through rand, so it is seeded by manual_seed, replayed under capture and made on the
// logits' device.
#include <limits>

#include "runtime/dims.h"
#include "runtime/dtype.h"
#include "runtime/functional.h"
#include "runtime/nn/functional_activations_more.h"

namespace ember::nn::functional {

namespace {

// Gumbel(0, 1) noise of the logits' shape: -log(E), E ~ Exp(1) as -log1p(-U) (PyTorch's CPU
// exponential_), in float64 for float64 logits and float32 otherwise. U = 0 would give E = 0 and
// an infinite g (then NaN out of softmax); E is raised to float32's smallest normal instead.
Tensor gumbel_noise(const Tensor& logits) {
  const DType draw = logits.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const Tensor uniform = rand(logits.sizes(), {.dtype = draw, .device = logits.device()});
  const Tensor exponential = clamp(neg(log1p(neg(uniform))), std::numeric_limits<float>::min(), std::nullopt);
  const Tensor noise = neg(log(exponential));
  return noise.dtype() == logits.dtype() ? noise : to_dtype(noise, logits.dtype());
}

}  // namespace

Tensor gumbel_softmax(const Tensor& logits, double tau, bool hard, int64_t dim, Where where) {
  CallSiteScope site(where);
  check(logits.defined(), "gumbel_softmax: expected logits to be defined");
  check(is_floating(logits.dtype()), "gumbel_softmax: expected floating logits, got {} of shape {}", logits.dtype(),
        logits.sizes());
  const int d = wrap_dim(dim, logits.dim(), "gumbel_softmax");
  const Tensor soft = softmax(div(add(logits, gumbel_noise(logits)), tau), d);
  if (!hard) return soft;
  // Straight through: the one-hot of the argmax in value, the soft sample's gradient.
  const int64_t classes = logits.dim() == 0 ? 1 : logits.size(d);
  Dims position_shape = Dims::filled(logits.dim(), 1);
  if (logits.dim() > 0) position_shape[d] = classes;
  const Tensor positions =
      reshape(arange(static_cast<double>(classes), {.dtype = kInt64, .device = logits.device()}), position_shape);
  const Tensor chosen = argmax(soft, d, true);
  const Tensor one_hot_sample = to_dtype(eq(positions, chosen), soft.dtype());
  return add(sub(one_hot_sample, soft.detach()), soft);
}

}  // namespace ember::nn::functional
