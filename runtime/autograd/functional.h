// torch.autograd.functional: vector-Jacobian and Jacobian-vector products, Jacobians, Hessians and
// Hessian-vector products of a function of tensors, all built on autograd::grad (grad.h).
#pragma once

#include <functional>
#include <vector>

#include "runtime/tensor.h"

namespace ember::autograd::functional {

// The functions differentiated: of several tensors (in the order of `inputs`) or of one.
using Function = std::function<Tensor(const std::vector<Tensor>& inputs)>;
using UnaryFunction = std::function<Tensor(const Tensor& input)>;
using MultiOutputFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

// fn's output and one product per input (vjp, vhp, hvp).
struct OutputAndProducts {
  Tensor output;
  std::vector<Tensor> products;
};
// fn's output and one product (jvp: shaped like the output; the one-input vjp, vhp, hvp).
struct OutputAndProduct {
  Tensor output;
  Tensor product;
};

// Common to all, as in PyTorch:
// - fn runs in grad mode (also under NoGradGuard) on aliases of the inputs that require grad:
//   detached ones, or with create_graph, for an input that requires grad, a view that keeps its
//   history, so the results can be differentiated again with respect to the user's inputs.
// - Without create_graph the output and the results are detached (no history).
// - An input the output does not depend on gets zeros; with strict it is an error, as is an
//   output that does not require grad (strict and create_graph: also a result without history).
// - A `v` must have the shape of what it multiplies. It may be left undefined (empty) only when
//   that is one one-element tensor: it is then 1.
// - The products and Jacobians are computed by reverse mode only: one autograd::grad per output
//   element for a Jacobian (PyTorch's vectorize=True is not offered), and jvp/hvp by the double
//   backward trick (no forward-mode AD).

// v^T J: d<v, fn(inputs)>/d(inputs[i]) for each input; v has fn's output shape.
OutputAndProducts vjp(const Function& fn, const std::vector<Tensor>& inputs, const Tensor& v = {},
                      bool create_graph = false, bool strict = false, Where where = Where::current());
OutputAndProduct vjp(const UnaryFunction& fn, const Tensor& input, const Tensor& v = {}, bool create_graph = false,
                     bool strict = false, Where where = Where::current());

// J v = sum_i d fn / d inputs[i] . v[i] (shaped like fn's output); v has one tensor per input, each
// of its input's shape. Computed as PyTorch does without forward mode: the gradient g(u) = J^T u
// of fn for a dummy u is linear in u, so the gradient of <g(u), v> with respect to u is J v.
OutputAndProduct jvp(const Function& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v = {},
                     bool create_graph = false, bool strict = false, Where where = Where::current());
OutputAndProduct jvp(const UnaryFunction& fn, const Tensor& input, const Tensor& v = {}, bool create_graph = false,
                     bool strict = false, Where where = Where::current());

// d fn(inputs)[o] / d inputs[i] as result[o][i], of shape output o's shape + input i's shape;
// row by row, one reverse pass per output element.
std::vector<std::vector<Tensor>> jacobian(const MultiOutputFunction& fn, const std::vector<Tensor>& inputs,
                                          bool create_graph = false, bool strict = false,
                                          Where where = Where::current());
// One output: result[i], of shape the output's shape + input i's shape.
std::vector<Tensor> jacobian(const Function& fn, const std::vector<Tensor>& inputs, bool create_graph = false,
                             bool strict = false, Where where = Where::current());
Tensor jacobian(const UnaryFunction& fn, const Tensor& input, bool create_graph = false, bool strict = false,
                Where where = Where::current());

// fn returns one element. result[i][j] = d^2 fn / d inputs[i] d inputs[j], of shape input i's
// shape + input j's shape: the Jacobian of fn's gradient.
std::vector<std::vector<Tensor>> hessian(const Function& fn, const std::vector<Tensor>& inputs,
                                         bool create_graph = false, bool strict = false,
                                         Where where = Where::current());
Tensor hessian(const UnaryFunction& fn, const Tensor& input, bool create_graph = false, bool strict = false,
               Where where = Where::current());

// fn returns one element; v has one tensor per input. vhp: v^T H, the gradient of <grad fn, v>;
// hvp: H v, by the double backward trick (as PyTorch; equal to vhp for a twice continuously
// differentiable fn, whose Hessian is symmetric). One product per input.
OutputAndProducts vhp(const Function& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v = {},
                      bool create_graph = false, bool strict = false, Where where = Where::current());
OutputAndProduct vhp(const UnaryFunction& fn, const Tensor& input, const Tensor& v = {}, bool create_graph = false,
                     bool strict = false, Where where = Where::current());
OutputAndProducts hvp(const Function& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v = {},
                      bool create_graph = false, bool strict = false, Where where = Where::current());
OutputAndProduct hvp(const UnaryFunction& fn, const Tensor& input, const Tensor& v = {}, bool create_graph = false,
                     bool strict = false, Where where = Where::current());

}  // namespace ember::autograd::functional
