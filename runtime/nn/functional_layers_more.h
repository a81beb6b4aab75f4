// More of torch.nn.functional: instance_norm, the channel dropouts (dropout1d/2d/3d,
// feature_dropout, alpha_dropout, feature_alpha_dropout) and bilinear, as composites of registry
// ops (batch_norm, rand, matmul, ...), so autograd, CUDA and the compile stage come with them.
#pragma once

#include "runtime/functional.h"

namespace ember::nn::functional {

// torch.nn.functional.instance_norm: input [N, C, *] normalised per sample and channel over the
// spatial dims *, y = (x - mean) / sqrt(var + eps) * weight_c + bias_c, with the biased variance
// when use_input_stats (which needs more than one spatial element), else with running_mean /
// running_var [C]. As ATen's, this is batch_norm over the input seen as [1, N * C, *] with the
// estimates repeated N times; after a training forward each estimate becomes the mean over the
// batch of its N blended copies: running = momentum * mean_n(stat_n) + (1 - momentum) * running,
// the variance unbiased (n / (n - 1)). weight, bias and the estimates may be undefined.
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {}, const Tensor& running_var = {},
                     const Tensor& weight = {}, const Tensor& bias = {}, bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5, Where where = Where::current());

// Channel dropout (ATen's feature_dropout): while training, each (sample, channel) slice of
// input [N, C, *] is zeroed with probability p and the rest scaled by 1 / (1 - p); the mask is
// drawn as [N, C, 1, ...] from the default generator's Philox stream, so manual_seed repeats it.
Tensor feature_dropout(const Tensor& input, double p = 0.5, bool training = true, Where where = Where::current());
// [N, C, L] or unbatched [C, L].
Tensor dropout1d(const Tensor& input, double p = 0.5, bool training = true, Where where = Where::current());
// [N, C, H, W]; as PyTorch's, a 3-D input is read as [N, C, L] (its channel-wise 1-D behaviour),
// and other ranks (which PyTorch warns about) are still dropped along dim 1.
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true, Where where = Where::current());
// [N, C, D, H, W] or unbatched [C, D, H, W]; another rank is read as unbatched, as PyTorch does.
Tensor dropout3d(const Tensor& input, double p = 0.5, bool training = true, Where where = Where::current());
// SELU's dropout (ATen's alpha_dropout): with keep ~ Bernoulli(1 - p), alpha = 1.7580993408473766
// (SELU's scale * alpha, -alpha its lower bound) and a = 1 / sqrt((alpha^2 p + 1)(1 - p)),
// y = a * x * keep + a * alpha * (p - 1 + keep): a dropped element becomes a * alpha * (p - 1), and
// a zero-mean, unit-variance input keeps its mean and variance.
// PyTorch's default is training = false for these two.
Tensor alpha_dropout(const Tensor& input, double p = 0.5, bool training = false, Where where = Where::current());
// alpha_dropout with the mask drawn per (sample, channel), as feature_dropout's.
Tensor feature_alpha_dropout(const Tensor& input, double p = 0.5, bool training = false,
                             Where where = Where::current());

// torch.nn.functional.bilinear: y[*, o] = sum_ij input1[*, i] weight[o, i, j] input2[*, j] + bias[o]
// for input1 [*, in1], input2 [*, in2] (the same batch dims *), weight [out, in1, in2], bias [out]
// or undefined.
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {},
                Where where = Where::current());

}  // namespace ember::nn::functional
