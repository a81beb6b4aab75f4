// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_), under libtorch's
// namespace nn::utils and also reachable as optim::clip_grad_norm_.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember::nn::utils {

// Scales the gradients of `parameters` in place so that their total norm (all gradients viewed as
// one vector) is at most max_norm: each is multiplied by max_norm / (total_norm + 1e-6) when that is
// below 1. norm_type is any p but NaN, as torch.linalg.vector_norm takes: p > 0, infinity (max |g|),
// -infinity (min |g|), 0 or a negative p. Like PyTorch, the total is the norm of the gradients'
// norms, which for the p-norms (and +-infinity) is the norm of all elements as one vector, and for
// norm_type 0 is the number of gradients holding a non-zero (or NaN) element, not of elements.
// Returns the total norm before clipping, computed in double. Parameters without gradients are
// skipped; none at all gives 0. A non-finite norm is an error when error_if_nonfinite, otherwise
// the gradients are scaled by it like PyTorch does.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false, Where where = Where::current());

// The two halves of clip_grad_norm_ without its host read (torch.nn.utils.get_total_norm and
// clip_grads_with_norm_), so a compiled step can clip: the norm stays a 0-d float64 tensor on the
// first tensor's device, and the scale max_norm / (norm + 1e-6), clamped to at most 1, is applied
// on the gradients' devices. Undefined tensors are skipped; none at all gives a norm of 0.
// error_if_nonfinite needs the norm on the host (a sync, and a graph break under ember::compile).
Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type = 2.0, bool error_if_nonfinite = false,
                      Where where = Where::current());
void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm, const Tensor& total_norm,
                           Where where = Where::current());

// Clamps every gradient element to [-clip_value, clip_value] in place. Errors from these functions
// name the caller's line.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value, Where where = Where::current());

}  // namespace ember::nn::utils

namespace ember::optim {
using nn::utils::clip_grad_norm_;
using nn::utils::clip_grad_value_;
using nn::utils::clip_grads_with_norm_;
using nn::utils::get_total_norm;
}  // namespace ember::optim
