// The steps autograd::functional's entry points share (functional_steps.h).
#include "runtime/autograd/functional_steps.h"

#include "runtime/autograd/grad.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::autograd::functional::steps {

Function of_one_input(const UnaryFunction& fn) {
  return [&fn](const std::vector<Tensor>& inputs) { return fn(inputs[0]); };
}

std::vector<Tensor> one_or_none(const Tensor& v) {
  return v.defined() ? std::vector<Tensor>{v} : std::vector<Tensor>{};
}

std::vector<Tensor> prepare_inputs(const char* function, const std::vector<Tensor>& inputs, bool create_graph) {
  check(!inputs.empty(), "{}: inputs is empty; pass the tensors fn takes", function);
  for (size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i].defined(), "{}: input {} is an undefined tensor", function, i);
    check(is_floating(inputs[i].dtype()), "{}: input {} has dtype {}; only floating-point inputs can be differentiated",
          function, i, inputs[i].dtype());
  }
  std::vector<Tensor> prepared;
  prepared.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    // PyTorch's view_as(input): a same-shape expand is a view for any strides.
    if (create_graph && input.requires_grad()) {
      prepared.push_back(input.expand(input.sizes()));
      continue;
    }
    Tensor alias = input.detach();
    alias.requires_grad_();
    prepared.push_back(std::move(alias));
  }
  return prepared;
}

Tensor call_user(const char* function, const Function& fn, const std::vector<Tensor>& inputs) {
  Tensor output;
  {
    const CallSiteSuspend user_code;
    output = fn(inputs);
  }
  check(output.defined(), "{}: fn returned an undefined tensor", function);
  return output;
}

std::vector<Tensor> grad_of(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& grad_outputs, bool create_graph, bool retain_graph) {
  std::vector<Tensor> differentiable;
  std::vector<Tensor> seeds;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].defined() || !outputs[k].requires_grad()) continue;  // contributes nothing
    differentiable.push_back(outputs[k]);
    seeds.push_back(grad_outputs.empty() ? Tensor() : grad_outputs[k]);
  }
  if (differentiable.empty()) return std::vector<Tensor>(inputs.size());
  return grad(differentiable, inputs, seeds, retain_graph || create_graph, create_graph, /*allow_unused=*/true);
}

void check_requires_grad(const char* function, const std::vector<Tensor>& tensors, Checked what, bool strict) {
  if (!strict) return;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check(tensors[i].defined(),
          "{}: the output of the user-provided function is independent of input {}. This is not allowed in strict "
          "mode",
          function, i);
    if (tensors[i].requires_grad()) continue;
    switch (what) {
      case Checked::Outputs:
        fail("{}: output {} of the user-provided function does not require grad. The outputs must be computed in a "
             "differentiable manner from the inputs in strict mode",
             function, i);
      case Checked::GradInputs:
        fail("{}: the gradient with respect to input {} is independent of the inputs of the user-provided "
             "function. This is not allowed in strict mode",
             function, i);
      case Checked::Jacobian:
        fail("{}: the jacobian of the user-provided function with respect to input {} is independent of the input "
             "(a linear function, say). This is not allowed in strict mode",
             function, i);
    }
  }
}

namespace {

[[noreturn]] void fail_unused(const char* function, size_t i, Stage stage) {
  switch (stage) {
    case Stage::Backward:
      fail("{}: the output of the user-provided function is independent of input {}. This is not allowed in strict "
           "mode",
           function, i);
    case Stage::BackwardTrick:
      fail("{}: the gradient with respect to the inputs is independent of entry {} of the grad_outputs of the double "
           "backward trick (no forward-mode AD). This is not allowed in strict mode",
           function, i);
    case Stage::DoubleBackward:
      fail("{}: the jacobian of the user-provided function is independent of input {}. This is not allowed in "
           "strict mode",
           function, i);
    case Stage::DoubleBackwardTrick:
      break;
  }
  fail("{}: the hessian of the user-provided function is independent of entry {} of the grad_jacobian of the double "
       "backward trick (no forward-mode AD). This is not allowed in strict mode",
       function, i);
}

}  // namespace

std::vector<Tensor> fill_in_zeros(const char* function, std::vector<Tensor> grads, const std::vector<Tensor>& refs,
                                  bool strict, bool create_graph, Stage stage) {
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) {
      if (strict) fail_unused(function, i, stage);
      grads[i] = zeros_like(refs[i]);
      continue;
    }
    const bool double_stage = stage == Stage::DoubleBackward || stage == Stage::DoubleBackwardTrick;
    check(!strict || !create_graph || grads[i].requires_grad(),
          "{}: the {} of the user-provided function is independent of input {}. This is not allowed in strict mode "
          "with create_graph=true",
          function, double_stage ? "hessian" : "jacobian", i);
  }
  return grads;
}

void check_input_v(const char* function, const std::vector<Tensor>& v, const std::vector<Tensor>& inputs) {
  if (v.empty()) {
    check(inputs.size() == 1 && inputs[0].defined() && inputs[0].numel() == 1,
          "{}: v can be omitted only for a single input with a single element; pass one v per input ({} inputs)",
          function, inputs.size());
    return;
  }
  check(v.size() == inputs.size(), "{}: v has {} tensors but there are {} inputs", function, v.size(), inputs.size());
  for (size_t i = 0; i < v.size(); ++i) {
    check(v[i].defined(), "{}: v[{}] is an undefined tensor", function, i);
    check(v[i].sizes() == inputs[i].sizes(), "{}: v[{}] has shape {} but input {} has shape {}", function, i,
          v[i].sizes(), i, inputs[i].sizes());
  }
}

void check_output_v(const char* function, const Tensor& v, const Tensor& output) {
  if (!v.defined()) {
    check(output.numel() == 1,
          "{}: v can be omitted only when fn returns a single element; it returned shape {}, pass v of that shape",
          function, output.sizes());
    return;
  }
  check(v.sizes() == output.sizes(), "{}: v has shape {} but the output of fn has shape {}", function, v.sizes(),
        output.sizes());
}

void check_one_element(const char* function, const Tensor& output) {
  check(output.numel() == 1, "{}: fn must return a tensor with a single element, it returned shape {}", function,
        output.sizes());
}

Tensor finish(const Tensor& tensor, bool create_graph) { return create_graph ? tensor : tensor.detach(); }

std::vector<Tensor> finish(std::vector<Tensor> tensors, bool create_graph) {
  if (!create_graph)
    for (Tensor& tensor : tensors) tensor = tensor.detach();
  return tensors;
}

}  // namespace ember::autograd::functional::steps
