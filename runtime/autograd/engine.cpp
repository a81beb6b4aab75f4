// The backward engine: counts dependencies from the roots, then runs each node once all the
// gradients flowing into it have been summed, latest-created first.
#include <queue>
#include <unordered_map>

#include "runtime/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::autograd {

namespace {

struct LaterFirst {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

// How many edges point at each node reachable from the roots (not beyond a stop node).
std::unordered_map<Node*, int> count_dependencies(const std::vector<Node*>& roots, const StopAt& stop) {
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack = roots;
  std::unordered_map<Node*, bool> seen;
  for (Node* root : roots) seen[root] = true;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (stop && stop(*node)) continue;
    for (const Edge& edge : node->next_edges) {
      if (!edge.node) continue;
      ++dependencies[edge.node.get()];
      if (!seen[edge.node.get()]) {
        seen[edge.node.get()] = true;
        stack.push_back(edge.node.get());
      }
    }
  }
  return dependencies;
}

void accumulate(std::vector<Tensor>& buffer, uint32_t slot, Tensor gradient) {
  if (!gradient.defined()) return;
  Tensor& current = buffer[slot];
  current = current.defined() ? add(current, gradient) : std::move(gradient);
}

// The engine: without `stop`, every reachable node runs; with it, see run_backward_until.
void execute(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, bool retain_graph,
             const StopAt& stop, const GradientArrived& arrived) {
  NoGradGuard no_grad;  // backward math is not itself recorded
  // Backward ops run in the dtypes their forward ops chose; autocast would recast them.
  AutocastGuard no_autocast(autocast_dtype(), false);
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::vector<Node*> root_nodes;
  std::vector<std::shared_ptr<Node>> keep_alive;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge edge = gradient_edge(roots[i]);
    if (!edge.node) continue;
    auto [slot, inserted] = buffers.try_emplace(edge.node.get(), edge.node->num_outputs());
    if (inserted) root_nodes.push_back(edge.node.get());
    accumulate(slot->second, edge.input_nr, grad_roots[i]);
    keep_alive.push_back(edge.node);
  }

  std::unordered_map<Node*, int> dependencies = count_dependencies(root_nodes, stop);
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (Node* root : root_nodes)
    if (dependencies[root] == 0) ready.push(root);

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[node]);
    buffers.erase(node);
    if (stop && stop(*node)) {
      for (int output = 0; output < node->num_outputs(); ++output)
        if (grads[output].defined()) arrived(*node, static_cast<uint32_t>(output), grads[output]);
      continue;
    }
    for (int output = 0; output < node->num_outputs(); ++output) {
      for (const GradHook& hook : node->output_hooks[output]) {
        if (!grads[output].defined()) continue;
        Tensor replaced = hook(grads[output]);
        if (replaced.defined()) grads[output] = replaced;
      }
    }
    bool any_gradient = false;
    for (const Tensor& grad : grads) any_gradient = any_gradient || grad.defined();
    // A node reached only by undefined gradients contributes nothing (e.g. an unused output).
    std::vector<Tensor> grad_inputs;
    if (any_gradient) grad_inputs = node->apply(std::move(grads));
    if (!retain_graph) node->release_saved();
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& edge = node->next_edges[i];
      if (!edge.node) continue;
      auto [slot, inserted] = buffers.try_emplace(edge.node.get(), edge.node->num_outputs());
      if (i < grad_inputs.size()) accumulate(slot->second, edge.input_nr, std::move(grad_inputs[i]));
      if (--dependencies[edge.node.get()] == 0) ready.push(edge.node.get());
    }
  }
}

}  // namespace

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                  bool retain_graph) {
  execute(roots, grad_roots, retain_graph, nullptr, nullptr);
}

void run_backward_until(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                        const StopAt& stop, const GradientArrived& arrived) {
  execute(roots, grad_roots, /*retain_graph=*/true, stop, arrived);
}

}  // namespace ember::autograd
