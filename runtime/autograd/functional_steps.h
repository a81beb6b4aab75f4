// The steps autograd::functional's entry points (functional.h) share: preparing the inputs,
// calling the user's function, a gradient over the differentiable outputs only, strict mode's
// checks and the zeros for unused inputs (PyTorch's _grad_preprocess, _autograd_grad,
// _check_requires_grad, _fill_in_zeros, _validate_v).
#pragma once

#include <vector>

#include "runtime/autograd/functional.h"

namespace ember::autograd::functional::steps {

// The one-input overloads: fn of inputs[0]; v as a list, empty for an undefined one.
Function of_one_input(const UnaryFunction& fn);
std::vector<Tensor> one_or_none(const Tensor& v);

// The tensors fn runs on: a view that keeps an input's history with create_graph (when it requires
// grad), else a detached alias that requires grad. Distinct tensors even for a repeated input.
std::vector<Tensor> prepare_inputs(const char* function, const std::vector<Tensor>& inputs, bool create_graph);

// Runs the user's fn with the call site suspended, so its own errors name its own lines.
Tensor call_user(const char* function, const Function& fn, const std::vector<Tensor>& inputs);

// autograd::grad of the outputs that require grad (with their grad_outputs, if not empty), all
// inputs allowed unused; all undefined when no output requires grad.
std::vector<Tensor> grad_of(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& grad_outputs, bool create_graph, bool retain_graph = false);

// What strict mode requires to carry history.
enum class Checked { Outputs, GradInputs, Jacobian };
void check_requires_grad(const char* function, const std::vector<Tensor>& tensors, Checked what, bool strict);

// Which pass left a gradient undefined, for the errors.
enum class Stage { Backward, BackwardTrick, DoubleBackward, DoubleBackwardTrick };
// Undefined gradients become zeros shaped like refs[i] (strict: an error); with strict and
// create_graph a gradient without history is an error too.
std::vector<Tensor> fill_in_zeros(const char* function, std::vector<Tensor> grads, const std::vector<Tensor>& refs,
                                  bool strict, bool create_graph, Stage stage);

// v (one per input) against the inputs; empty only for one one-element input.
void check_input_v(const char* function, const std::vector<Tensor>& v, const std::vector<Tensor>& inputs);
// v against fn's output; undefined only for a one-element output.
void check_output_v(const char* function, const Tensor& v, const Tensor& output);
// hessian, vhp, hvp: fn's output must hold one element.
void check_one_element(const char* function, const Tensor& output);

// Without create_graph the results are detached, as PyTorch's _grad_postprocess.
Tensor finish(const Tensor& tensor, bool create_graph);
std::vector<Tensor> finish(std::vector<Tensor> tensors, bool create_graph);

// The row-by-row Jacobian (functional.h) for `function`'s errors: result[o][i].
std::vector<std::vector<Tensor>> jacobian_of(const char* function, const MultiOutputFunction& fn,
                                             const std::vector<Tensor>& inputs, bool create_graph, bool strict);

}  // namespace ember::autograd::functional::steps
