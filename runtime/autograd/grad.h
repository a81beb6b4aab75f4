// torch.autograd.grad: the gradients of `outputs` with respect to `inputs`, returned instead of
// accumulated into .grad. With create_graph the gradients carry history, so they can be
// differentiated again (gradient penalties, Hessian-vector products, double backward).
#pragma once

#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace ember::autograd {

// One gradient per input: d(sum_k <grad_outputs[k], outputs[k]>) / d(inputs[i]), as PyTorch's
// torch.autograd.grad.
// - No .grad changes, of the inputs or of any other leaf: only the nodes on a path from the
//   outputs to an input run, and no AccumulateGrad among them. Hooks registered on the inputs
//   (and on the tensors between) run, and retain_grad() tensors on those paths get their .grad, as
//   in PyTorch, whose engine runs both for every tensor it passes.
// - inputs may be leaves or not; each must require grad. A non-leaf input's gradient is the one
//   its grad_fn received for it.
// - grad_outputs: empty, or one per output (undefined: ones, for a one-element output only).
// - retain_graph defaults to create_graph; without it the traversed nodes free their saved
//   tensors, and a second pass through them is an error.
// - An input the outputs do not depend on is an error naming its index, unless allow_unused:
//   then its gradient is an undefined Tensor, or with materialize_grads zeros of its shape, dtype
//   and device that require grad (as PyTorch's). allow_unused defaults to materialize_grads;
//   materialize_grads with allow_unused=false is an error, as in PyTorch.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, std::optional<bool> allow_unused = std::nullopt,
                         bool materialize_grads = false, Where where = Where::current());

}  // namespace ember::autograd
