// autograd::functional's first-order entry points (functional.h): vjp, jvp, jacobian.
#include "runtime/autograd/functional.h"

#include "runtime/autograd/functional_steps.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::autograd::functional {

using steps::of_one_input;
using steps::one_or_none;

OutputAndProducts vjp(const Function& fn, const std::vector<Tensor>& inputs, const Tensor& v, bool create_graph,
                      bool strict, Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::functional::vjp";
  const AutoGradMode grad_mode(true);  // as PyTorch: also under NoGradGuard
  const std::vector<Tensor> prepared = steps::prepare_inputs(function, inputs, create_graph);
  const Tensor output = steps::call_user(function, fn, prepared);
  steps::check_requires_grad(function, {output}, steps::Checked::Outputs, strict);
  steps::check_output_v(function, v, output);
  std::vector<Tensor> grads = steps::grad_of({output}, prepared, {v}, create_graph);
  grads = steps::fill_in_zeros(function, std::move(grads), prepared, strict, create_graph, steps::Stage::Backward);
  return {steps::finish(output, create_graph), steps::finish(std::move(grads), create_graph)};
}

OutputAndProduct vjp(const UnaryFunction& fn, const Tensor& input, const Tensor& v, bool create_graph, bool strict,
                     Where where) {
  OutputAndProducts result = vjp(of_one_input(fn), {input}, v, create_graph, strict, where);
  return {std::move(result.output), std::move(result.products[0])};
}

OutputAndProduct jvp(const Function& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v,
                     bool create_graph, bool strict, Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::functional::jvp";
  steps::check_input_v(function, v, inputs);
  const AutoGradMode grad_mode(true);
  const std::vector<Tensor> prepared = steps::prepare_inputs(function, inputs, create_graph);
  const Tensor output = steps::call_user(function, fn, prepared);
  steps::check_requires_grad(function, {output}, steps::Checked::Outputs, strict);
  // The backward is linear in its seed, so the seed's value never reaches the result: zeros (no
  // inf or nan to spread) that require grad, so the gradient records how it depends on them.
  Tensor seed = zeros_like(output);
  seed.requires_grad_();
  const std::vector<Tensor> grad_inputs = steps::grad_of({output}, prepared, {seed}, /*create_graph=*/true);
  steps::check_requires_grad(function, grad_inputs, steps::Checked::GradInputs, strict);
  std::vector<Tensor> product = steps::grad_of(grad_inputs, {seed}, v, create_graph);
  product = steps::fill_in_zeros(function, std::move(product), {output}, strict, create_graph,
                                 steps::Stage::BackwardTrick);
  return {steps::finish(output, create_graph), steps::finish(product[0], create_graph)};
}

OutputAndProduct jvp(const UnaryFunction& fn, const Tensor& input, const Tensor& v, bool create_graph, bool strict,
                     Where where) {
  return jvp(of_one_input(fn), {input}, one_or_none(v), create_graph, strict, where);
}

namespace steps {

std::vector<std::vector<Tensor>> jacobian_of(const char* function, const MultiOutputFunction& fn,
                                             const std::vector<Tensor>& inputs, bool create_graph, bool strict) {
  const AutoGradMode grad_mode(true);
  const std::vector<Tensor> prepared = prepare_inputs(function, inputs, create_graph);
  const std::vector<Tensor> outputs = fn(prepared);
  for (size_t o = 0; o < outputs.size(); ++o)
    check(outputs[o].defined(), "{}: output {} of fn is an undefined tensor", function, o);
  check_requires_grad(function, outputs, Checked::Outputs, strict);
  std::vector<std::vector<Tensor>> jacobian(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& output = outputs[o];
    // Row j of d output / d input i is the gradient of the output's element j.
    std::vector<std::vector<Tensor>> rows(prepared.size());
    const Tensor flat = output.reshape({-1});
    for (int64_t j = 0; j < output.numel(); ++j) {
      const std::vector<Tensor> row = grad_of({flat.select(0, j)}, prepared, {}, create_graph, /*retain_graph=*/true);
      for (size_t i = 0; i < prepared.size(); ++i) {
        if (row[i].defined()) {
          check(!strict || !create_graph || row[i].requires_grad(),
                "{}: the jacobian of output {} of the user-provided function is independent of input {}. This is "
                "not allowed in strict mode with create_graph=true",
                function, o, i);
          rows[i].push_back(row[i]);
          continue;
        }
        check(!strict,
              "{}: output {} of the user-provided function is independent of input {}. This is not allowed in "
              "strict mode",
              function, o, i);
        rows[i].push_back(zeros_like(prepared[i]));
      }
    }
    for (size_t i = 0; i < prepared.size(); ++i) {
      Dims shape = output.sizes();
      for (const int64_t size : prepared[i].sizes()) shape.push_back(size);
      // An empty output has an empty Jacobian (PyTorch's stack of no rows refuses it instead).
      const Tensor block = rows[i].empty()
                               ? zeros(shape, {.dtype = prepared[i].dtype(), .device = prepared[i].device()})
                               : stack(rows[i], 0).view(shape);
      jacobian[o].push_back(finish(block, create_graph));
    }
  }
  return jacobian;
}

}  // namespace steps

std::vector<std::vector<Tensor>> jacobian(const MultiOutputFunction& fn, const std::vector<Tensor>& inputs,
                                          bool create_graph, bool strict, Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::functional::jacobian";
  const MultiOutputFunction user_fn = [&fn](const std::vector<Tensor>& prepared) {
    const CallSiteSuspend user_code;
    return fn(prepared);
  };
  return steps::jacobian_of(function, user_fn, inputs, create_graph, strict);
}

std::vector<Tensor> jacobian(const Function& fn, const std::vector<Tensor>& inputs, bool create_graph, bool strict,
                             Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::functional::jacobian";
  const MultiOutputFunction one_output = [&](const std::vector<Tensor>& prepared) {
    return std::vector<Tensor>{steps::call_user(function, fn, prepared)};
  };
  return steps::jacobian_of(function, one_output, inputs, create_graph, strict)[0];
}

Tensor jacobian(const UnaryFunction& fn, const Tensor& input, bool create_graph, bool strict, Where where) {
  return jacobian(of_one_input(fn), {input}, create_graph, strict, where)[0];
}

}  // namespace ember::autograd::functional
