// Functions of torch.nn.functional that act across the channel dim (dim 1): local_response_norm
// and channel_shuffle, composites of registry ops (pad, avg_pool, pow; reshape, permute), so that
// autograd, CUDA and the compile stage come with them.
#pragma once

#include "runtime/tensor.h"

namespace ember::nn::functional {

// torch.nn.functional.local_response_norm over input [N, C, *] (at least 3 dims):
//   y[n, c] = x[n, c] / (k + alpha / size * sum_{c'} x[n, c']^2)^beta
// with c' from c - size / 2 to c + (size - 1) / 2 (integer halves), channels outside [0, C) counting
// as zeros; computed as PyTorch does, an avg_pool of the zero-padded squares over the channel dim.
// size >= 1. An empty input is returned as it is, as PyTorch's.
Tensor local_response_norm(const Tensor& input, int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0,
                           Where where = Where::current());

// torch.nn.functional.channel_shuffle: input [N, C, *] (at least 3 dims) with C = groups * m, seen
// as [N, groups, m, *], has its two channel dims swapped: output channel j * groups + g is input
// channel g * m + j. groups > 0 must divide C. The result is a new tensor (a copy), as PyTorch's.
Tensor channel_shuffle(const Tensor& input, int64_t groups, Where where = Where::current());

}  // namespace ember::nn::functional
