// autograd::functional's second-order entry points (functional.h): hessian, vhp, hvp.
#include "runtime/autograd/functional.h"
#include "runtime/autograd/functional_steps.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::autograd::functional {

using steps::of_one_input;
using steps::one_or_none;

namespace {

// fn's output, checked to be one element that requires grad (strict), and the gradient of fn
// with respect to the prepared inputs, with history (undefined for an unused input).
struct OutputAndGradient {
  Tensor output;
  std::vector<Tensor> gradient;
};
OutputAndGradient output_and_gradient(const char* function, const Function& fn, const std::vector<Tensor>& prepared,
                                      bool strict) {
  const Tensor output = steps::call_user(function, fn, prepared);
  steps::check_requires_grad(function, {output}, steps::Checked::Outputs, strict);
  steps::check_one_element(function, output);
  std::vector<Tensor> gradient = steps::grad_of({output}, prepared, {}, /*create_graph=*/true);
  steps::check_requires_grad(function, gradient, steps::Checked::Jacobian, strict);
  return {output, std::move(gradient)};
}

}  // namespace

std::vector<std::vector<Tensor>> hessian(const Function& fn, const std::vector<Tensor>& inputs, bool create_graph,
                                         bool strict, Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::functional::hessian";
  // The Jacobian of fn's gradient; the gradient is itself a (recorded) Jacobian of fn, squeezed to
  // the inputs' shapes, as PyTorch's hessian.
  const MultiOutputFunction scalar_fn = [&](const std::vector<Tensor>& prepared) {
    const Tensor output = steps::call_user(function, fn, prepared);
    steps::check_requires_grad(function, {output}, steps::Checked::Outputs, strict);
    steps::check_one_element(function, output);
    return std::vector<Tensor>{output.squeeze()};
  };
  const MultiOutputFunction gradient_fn = [&](const std::vector<Tensor>& prepared) {
    std::vector<Tensor> gradient =
        steps::jacobian_of(function, scalar_fn, prepared, /*create_graph=*/true, /*strict=*/false)[0];
    steps::check_requires_grad(function, gradient, steps::Checked::Jacobian, strict);
    return gradient;
  };
  return steps::jacobian_of(function, gradient_fn, inputs, create_graph, strict);
}

Tensor hessian(const UnaryFunction& fn, const Tensor& input, bool create_graph, bool strict, Where where) {
  return hessian(of_one_input(fn), {input}, create_graph, strict, where)[0][0];
}

OutputAndProducts vhp(const Function& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v,
                      bool create_graph, bool strict, Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::functional::vhp";
  steps::check_input_v(function, v, inputs);
  const AutoGradMode grad_mode(true);
  const std::vector<Tensor> prepared = steps::prepare_inputs(function, inputs, create_graph);
  const OutputAndGradient first = output_and_gradient(function, fn, prepared, strict);
  // v^T H = d <grad fn, v> / d inputs.
  std::vector<Tensor> products = steps::grad_of(first.gradient, prepared, v, create_graph);
  products = steps::fill_in_zeros(function, std::move(products), prepared, strict, create_graph,
                                  steps::Stage::DoubleBackward);
  return {steps::finish(first.output, create_graph), steps::finish(std::move(products), create_graph)};
}

OutputAndProduct vhp(const UnaryFunction& fn, const Tensor& input, const Tensor& v, bool create_graph, bool strict,
                     Where where) {
  OutputAndProducts result = vhp(of_one_input(fn), {input}, one_or_none(v), create_graph, strict, where);
  return {std::move(result.output), std::move(result.products[0])};
}

OutputAndProducts hvp(const Function& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v,
                      bool create_graph, bool strict, Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::functional::hvp";
  steps::check_input_v(function, v, inputs);
  const AutoGradMode grad_mode(true);
  const std::vector<Tensor> prepared = steps::prepare_inputs(function, inputs, create_graph);
  const OutputAndGradient first = output_and_gradient(function, fn, prepared, strict);
  // The double backward trick: u^T H is linear in a dummy u, so its gradient with respect to u,
  // taken along v, is H v.
  std::vector<Tensor> dummies;
  for (const Tensor& input : prepared) {
    Tensor dummy = zeros_like(input);
    dummy.requires_grad_();
    dummies.push_back(std::move(dummy));
  }
  const std::vector<Tensor> u_hessian = steps::grad_of(first.gradient, prepared, dummies, /*create_graph=*/true);
  std::vector<Tensor> products = steps::grad_of(u_hessian, dummies, v, create_graph);
  products = steps::fill_in_zeros(function, std::move(products), prepared, strict, create_graph,
                                  steps::Stage::DoubleBackwardTrick);
  return {steps::finish(first.output, create_graph), steps::finish(std::move(products), create_graph)};
}

OutputAndProduct hvp(const UnaryFunction& fn, const Tensor& input, const Tensor& v, bool create_graph, bool strict,
                     Where where) {
  OutputAndProducts result = hvp(of_one_input(fn), {input}, one_or_none(v), create_graph, strict, where);
  return {std::move(result.output), std::move(result.products[0])};
}

}  // namespace ember::autograd::functional
