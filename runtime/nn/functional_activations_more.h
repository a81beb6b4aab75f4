// The torch.nn.functional activations beyond runtime/functional.h's: hardtanh, relu6, threshold, glu,
// hardswish, hardsigmoid, mish, celu, softmin, logsigmoid, softsign, tanhshrink, softshrink,
// hardshrink, prelu, rrelu and gumbel_softmax, with PyTorch's signatures and defaults. Included by nn/functional.h.
//
// hardtanh (relu6), hardswish, hardsigmoid, mish and logsigmoid are registry ops with one kernel each,
// forward and backward, as PyTorch's (runtime/ops/activation_more_ops.cpp, math in
// kernels/activation_more_functors.h). The others are composites of registry ops
// (functional_activations_more.cpp, functional_activations_gated.cpp), so autograd, CUDA, autocast and
// capture come from the ops they call. Values and gradients are PyTorch's, at the kinks too: the ops'
// functors are PyTorch's kernels' formulas (aten/src/ATen/native/cpu/Activation.cpp); in a composite a
// `where` picks the side PyTorch's backward kernel takes (tools/autograd/derivatives.yaml), and each
// side is fed inputs clamped to its own range, so a side that is not taken never turns an infinity into
// a NaN gradient. bf16 and fp16 inputs are computed in float32 and rounded once, as PyTorch's kernels do (threshold
// and hardshrink compare in the input's dtype, their numbers rounded to it, as PyTorch's; softsign and
// tanhshrink, composites in PyTorch too, round each step to it).
// Only floating inputs are taken, but hardtanh, relu6 and threshold also take integers, as PyTorch's,
// and softsign and tanhshrink turn them into float32, as PyTorch's composites do.
#pragma once

#include "runtime/tensor.h"

namespace ember::nn::functional {

// min_val where x <= min_val, max_val where x >= max_val, else x (torch.clamp's values; a NaN bound
// makes every element NaN). min_val > max_val is refused, as torch.nn.functional.hardtanh refuses it
// (the registry op "hardtanh", like aten::hardtanh, clamps: every element is then max_val). The
// gradient is 1 strictly between the bounds and 0 at them (PyTorch's hardtanh_backward), and passes at
// NaN. An integer input is clamped to the bounds truncated to integers (PyTorch's legacy rule: the
// bounds do not promote it), and bounds int64 cannot hold (NaN, infinite) are refused; bool is refused.
Tensor hardtanh(const Tensor& input, double min_val = -1.0, double max_val = 1.0, Where where = Where::current());
// hardtanh(input, 0, 6), as PyTorch defines it.
Tensor relu6(const Tensor& input, Where where = Where::current());
// value where x <= threshold, else x (NaN passes); the gradient is 0 where x <= threshold. Both
// numbers are first converted to the input's dtype (truncated for integer inputs), as PyTorch's.
Tensor threshold(const Tensor& input, double threshold, double value, Where where = Where::current());
// The first half of `dim` times the sigmoid of the second half; the size of `dim` must be even.
Tensor glu(const Tensor& input, int64_t dim = -1, Where where = Where::current());
// x min(max(x + 3, 0), 6) / 6. Gradient 0 below -3, x / 3 + 1/2 on [-3, 3] (-1/2 at -3 and 3/2 at 3,
// the rule of PyTorch's scalar and CUDA kernels), 1 above 3 and at NaN.
Tensor hardswish(const Tensor& input, Where where = Where::current());
// min(max(x + 3, 0), 6) / 6. Gradient 1/6 strictly between -3 and 3, 0 at them, beyond and at NaN.
Tensor hardsigmoid(const Tensor& input, Where where = Where::current());
// x tanh(softplus(x)), softplus with ember's overflow-free form.
Tensor mish(const Tensor& input, Where where = Where::current());
// x where x > 0, else alpha (e^(x / alpha) - 1) through expm1 (as ember's elu); alpha = 0 is refused.
Tensor celu(const Tensor& input, double alpha = 1.0, Where where = Where::current());
// softmax(-x, dim), as torch.nn.functional.softmin.
Tensor softmin(const Tensor& input, int64_t dim, Where where = Where::current());
// log(sigmoid(x)) in the stable form min(x, 0) - log1p(e^-|x|): x itself far below 0, -0 far above.
// Gradient 1 - sigmoid(x) below 0, sigmoid(-x) from 0 on (1/2 at 0).
Tensor logsigmoid(const Tensor& input, Where where = Where::current());
// x / (1 + |x|), PyTorch's own composite (so NaN at the infinities, as there; a 16-bit input has
// 1 + |x| rounded to its dtype first).
Tensor softsign(const Tensor& input, Where where = Where::current());
// x - tanh(x), PyTorch's own composite (a 16-bit input has tanh(x) rounded to its dtype first).
Tensor tanhshrink(const Tensor& input, Where where = Where::current());
// x - lambd above lambd, x + lambd below -lambd, else 0; NaN passes (PyTorch since #138421). The
// gradient is 0 on [-lambd, lambd]. lambd must be >= 0.
Tensor softshrink(const Tensor& input, double lambd = 0.5, Where where = Where::current());
// 0 on [-lambd, lambd], else x (NaN passes); the gradient is 0 on [-lambd, lambd].
Tensor hardshrink(const Tensor& input, double lambd = 0.5, Where where = Where::current());
// x where x > 0, else weight x. weight is 0-d or 1-D of the input's dtype, with 1 element (shared) or
// input.size(1) = C of them (one per channel, broadcast over the dims after 1); a 0-d or 1-D input
// counts as one channel. The weight's gradient is the sum of x grad over the elements x <= 0.
Tensor prelu(const Tensor& input, const Tensor& weight, Where where = Where::current());
// leaky_relu with slope (lower + upper) / 2 when not training. Training: each element x <= 0 is
// multiplied by its own slope drawn uniformly from [lower, upper) (the default generator's Philox
// stream, through rand), which is also its gradient; lower must not exceed upper.
Tensor rrelu(const Tensor& input, double lower = 1.0 / 8.0, double upper = 1.0 / 3.0, bool training = false,
             Where where = Where::current());
// torch.nn.functional.gumbel_softmax: softmax((logits + g) / tau, dim) with g = -log(E), E drawn
// from Exp(1) as -log1p(-U), U uniform from the default generator of the logits' device (so
// manual_seed reproduces it; E is raised to float32's smallest normal, so g stays finite). hard:
// the one-hot of the sample's argmax along dim (first of ties), y_hard - detach(y_soft) + y_soft, so
// the value is one-hot and the gradient is the soft sample's (straight-through). Floating logits;
// 16-bit ones are drawn in float32. PyTorch's eps argument is unused there and left out here.
Tensor gumbel_softmax(const Tensor& logits, double tau = 1.0, bool hard = false, int64_t dim = -1,
                      Where where = Where::current());

}  // namespace ember::nn::functional
