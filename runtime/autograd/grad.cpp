// autograd::grad (grad.h) and the seeds every backward pass starts from.
#include "runtime/autograd/grad.h"

#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::autograd {

std::vector<Tensor> make_seeds(const char* function, const std::vector<Tensor>& outputs,
                               const std::vector<Tensor>& grad_outputs) {
  check(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "{}: got {} outputs but {} gradients",
        function, outputs.size(), grad_outputs.size());
  std::vector<Tensor> seeds;
  seeds.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    check(output.defined(), "{}: output {} is an undefined tensor", function, i);
    check(output.requires_grad(), "{}: output {} (shape {}) does not require grad and has no grad_fn", function, i,
          output.sizes());
    if (!grad_outputs.empty() && grad_outputs[i].defined()) {
      const Tensor& seed = grad_outputs[i];
      check(seed.sizes() == output.sizes(), "{}: the gradient of output {} has shape {} but the output has shape {}",
            function, i, seed.sizes(), output.sizes());
      check(seed.device() == output.device(), "{}: the gradient of output {} is on {} but the output is on {}",
            function, i, seed.device(), output.device());
      // Cast to the output's dtype, as PyTorch's engine does: a leaf root would otherwise keep a
      // .grad of the seed's dtype, which its optimizer then refuses.
      seeds.push_back(seed.dtype() == output.dtype() ? seed : seed.to(output.dtype()));
    } else {
      check(output.numel() == 1,
            "{}: grad can be implicitly created only for scalar outputs; output {} has shape {}, pass a gradient",
            function, i, output.sizes());
      seeds.push_back(ones_like(output));
    }
  }
  return seeds;
}

std::vector<Edge> accumulation_edges(const char* function, const std::vector<Tensor>& inputs) {
  check(!inputs.empty(), "{}: inputs is empty; pass the tensors whose .grad to accumulate, or no inputs for all leaves",
        function);
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i].defined(), "{}: input {} is an undefined tensor", function, i);
    check(inputs[i].requires_grad(), "{}: input {} (shape {}) does not require grad, so it has no .grad to accumulate",
          function, i, inputs[i].sizes());
  }
  for (const Tensor& input : inputs) {
    // As PyTorch's run_backward: a non-leaf input keeps its gradient in .grad, from now on.
    if (!input.is_leaf()) Tensor(input).retain_grad();
    edges.push_back(gradient_edge(input));
  }
  return edges;
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         std::optional<bool> allow_unused, bool materialize_grads, Where where) {
  CallSiteScope site(where);
  const char* function = "autograd::grad";
  check(!outputs.empty(), "{}: outputs is empty; pass the tensors to differentiate", function);
  check(!inputs.empty(), "{}: inputs is empty; pass the tensors to differentiate with respect to", function);
  check(!materialize_grads || allow_unused.value_or(true),
        "{}: materialize_grads=true needs allow_unused true or unset, got allow_unused=false", function);
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i].defined(), "{}: input {} is an undefined tensor", function, i);
    check(inputs[i].requires_grad(), "{}: input {} (shape {}) does not require grad, so it has no gradient", function,
          i, inputs[i].sizes());
    edges.push_back(gradient_edge(inputs[i]));
  }
  const std::vector<Tensor> seeds = make_seeds(function, outputs, grad_outputs);
  std::vector<Tensor> grads =
      run_backward_to(outputs, seeds, edges, retain_graph.value_or(create_graph), create_graph);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined()) continue;
    check(allow_unused.value_or(materialize_grads),
          "{}: input {} (shape {}) was not used in the graph of the outputs (it gets no gradient); pass "
          "allow_unused=true if that is intended",
          function, i, inputs[i].sizes());
    // As PyTorch: the zeros require grad, so a further grad() through them finds them (unused).
    if (materialize_grads) grads[i] = zeros_like(inputs[i]).requires_grad_();
  }
  return grads;
}

}  // namespace ember::autograd
