// The smooth, gated and learned activations of nn/functional_activations_more.h: mish and logsigmoid
// call their registry ops (runtime/ops/activation_more_ops.cpp); softmin, softsign, tanhshrink, glu,
// prelu and rrelu are composites of registry ops.
#include <optional>

#include "runtime/dispatch.h"
#include "runtime/nn/activation_composites.h"
#include "runtime/nn/functional_activations_more.h"

namespace ember::nn::functional {

using detail::check_floating_input;
using detail::computing_dtype;
using detail::scalar_of;
using detail::to_computing_dtype;

Tensor mish(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check_floating_input("mish", input);
  static const OpDef& op = lookup_op("mish");
  return dispatch_one(op, {input});
}

Tensor softmin(const Tensor& input, int64_t dim, Where where) {
  CallSiteScope site(where);
  return softmax(neg(input), dim);
}

Tensor logsigmoid(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check_floating_input("logsigmoid", input);
  static const OpDef& op = lookup_op("log_sigmoid");
  return dispatch_one(op, {input});
}

Tensor softsign(const Tensor& input, Where where) {
  CallSiteScope site(where);
  // PyTorch's is a composite of ops, so a 16-bit input rounds |x| + 1 to its dtype before the
  // division (computing in float32 and rounding once would differ from it), and an integer input
  // gives float32 through the true division. Its abs refuses bool.
  check(input.dtype() != kBool, "softsign: bool inputs are not supported (shape {})", input.sizes());
  return div(input, add(ember::abs(input), scalar_of(1.0, input)));
}

Tensor tanhshrink(const Tensor& input, Where where) {
  CallSiteScope site(where);
  // As softsign: PyTorch's composite rounds tanh(x) to a 16-bit input's dtype before subtracting,
  // and takes integers (tanh gives float32); bool - tanh(bool) is refused there.
  check(input.dtype() != kBool, "tanhshrink: bool inputs are not supported (shape {})", input.sizes());
  return sub(input, ember::tanh(input));
}

Tensor glu(const Tensor& input, int64_t dim, Where where) {
  CallSiteScope site(where);
  check(input.dim() > 0, "glu: does not support scalars (0-d input) because halving size must be even");
  check_floating_input("glu", input);
  const int wrapped = wrap_dim(dim, static_cast<int>(input.dim()), "glu");
  const int64_t size = input.size(wrapped);
  check(size % 2 == 0, "glu: halving dimension must be even, but dimension {} is size {} (input shape {})", wrapped,
        size, input.sizes());
  const Tensor x = to_computing_dtype(input);
  const Tensor first = slice(x, wrapped, 0, size / 2);
  const Tensor second = slice(x, wrapped, size / 2, size);
  return mul(first, sigmoid(second)).to(input.dtype());
}

Tensor prelu(const Tensor& input, const Tensor& weight, Where where) {
  CallSiteScope site(where);
  check(weight.defined(), "prelu: weight is undefined (input shape {})", input.sizes());
  check(input.dtype() == weight.dtype(), "prelu: type promoting not supported, got input {} and weight {}",
        input.dtype(), weight.dtype());
  check_floating_input("prelu", input);
  check(weight.dim() <= 1, "prelu: expected `weight` to be a scalar or 1D tensor, but got: ndim = {} (shape {})",
        weight.dim(), weight.sizes());
  const int64_t rank = input.dim();
  if (weight.numel() != 1) {
    check(rank > 0, "prelu: a 0-d input takes a weight of 1 element, got {}", weight.numel());
    const int64_t channels = rank > 1 ? input.size(1) : 1;
    check(weight.numel() == channels,
          "prelu: mismatch of parameter numbers and input channel size: found {} parameters and channel size {} "
          "(input shape {}; the channels are dim 1)",
          weight.numel(), channels, input.sizes());
  }
  // PyTorch's reshape of the weight to [1, C, 1, ...] so it broadcasts along dim 1.
  Tensor w = weight;
  if (rank != weight.dim()) {
    Dims shape;
    for (int64_t d = 0; d < rank; ++d) shape.push_back(d == 1 ? weight.numel() : 1);
    w = reshape(weight, shape);
  }
  const Tensor x = to_computing_dtype(input);
  w = to_computing_dtype(w);
  // The negative side reads min(x, 0): at x = +inf it would give the weight an inf * 0 = NaN gradient.
  const Tensor negative = mul(w, clamp(x, std::nullopt, 0.0));
  return ember::where(gt(x, scalar_of(0.0, x)), x, negative).to(input.dtype());
}

Tensor rrelu(const Tensor& input, double lower, double upper, bool training, Where where) {
  CallSiteScope site(where);
  check(lower <= upper,
        "rrelu: lower bound should be less than or equal to the upper bound, got lower = {} and "
        "upper = {}",
        lower, upper);
  check_floating_input("rrelu", input);
  if (!training) return leaky_relu(input, (lower + upper) / 2.0);
  const Tensor x = to_computing_dtype(input);
  // One slope per element, from rand's Philox stream (so seeded, replayed under capture, and on the
  // input's device); PyTorch draws only for elements <= 0, which uses its stream differently but
  // gives the same distribution.
  const TensorOptions options{.dtype = computing_dtype(input.dtype()), .device = input.device()};
  const Tensor slopes = add(mul(rand(input.sizes(), options), upper - lower), lower);
  return ember::where(gt(x, scalar_of(0.0, x)), x, mul(x, slopes)).to(input.dtype());
}

}  // namespace ember::nn::functional
