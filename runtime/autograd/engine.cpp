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

// What the engine tracks for each node reachable from the roots, in one map (one allocation per
// node rather than one per table).
struct NodeTask {
  int dependencies = 0;       // edges into the node from nodes that have not run yet
  bool seen = false;          // reached by the dependency count's walk
  std::vector<Tensor> grads;  // gradients summed so far, one slot per output (sized on arrival)
};
using Tasks = std::unordered_map<Node*, NodeTask>;

// Counts how many edges point at each node reachable from the roots (not beyond a stop node).
void count_dependencies(Tasks& tasks, const std::vector<Node*>& roots, const StopAt& stop) {
  std::vector<Node*> stack = roots;
  for (Node* root : roots) tasks[root].seen = true;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (stop && stop(*node)) continue;
    for (const Edge& edge : node->next_edges) {
      if (!edge.node) continue;
      NodeTask& task = tasks[edge.node.get()];
      ++task.dependencies;
      if (!task.seen) {
        task.seen = true;
        stack.push_back(edge.node.get());
      }
    }
  }
}

// Sums `gradient` into output `slot` of the node whose gradients `buffer` collects.
void accumulate(std::vector<Tensor>& buffer, const Node& node, uint32_t slot, Tensor gradient) {
  if (buffer.empty()) buffer.resize(static_cast<size_t>(node.num_outputs()));
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
  Tasks tasks;
  std::vector<Node*> root_nodes;
  std::vector<std::shared_ptr<Node>> keep_alive;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge edge = gradient_edge(roots[i]);
    if (!edge.node) continue;
    auto [slot, inserted] = tasks.try_emplace(edge.node.get());
    if (inserted) root_nodes.push_back(edge.node.get());
    accumulate(slot->second.grads, *edge.node, edge.input_nr, grad_roots[i]);
    keep_alive.push_back(edge.node);
  }

  count_dependencies(tasks, root_nodes, stop);
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (Node* root : root_nodes)
    if (tasks[root].dependencies == 0) ready.push(root);

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    // Moving the gradients out frees them with this step; the entry itself stays until the end.
    std::vector<Tensor> grads = std::move(tasks[node].grads);
    grads.resize(static_cast<size_t>(node->num_outputs()));
    if (stop && stop(*node)) {
      for (int output = 0; output < node->num_outputs(); ++output)
        if (grads[output].defined()) arrived(*node, static_cast<uint32_t>(output), grads[output]);
      continue;
    }
    for (int output = 0; output < node->num_outputs(); ++output) {
      // By index, each hook copied before it runs: a hook may register another on this tensor,
      // which grows the list under it (the new one runs from the next backward on).
      const std::vector<GradHook>& hooks = node->output_hooks[output];
      for (size_t h = 0, registered = hooks.size(); h < registered && grads[output].defined(); ++h) {
        const GradHook hook = hooks[h];
        grads[output] = run_grad_hook(hook, grads[output]);
      }
      // retain_grad() sees the gradient every hook has shaped, whenever it was called.
      if (static_cast<size_t>(output) < node->retained_by.size() && grads[output].defined())
        store_retained_grad(node->retained_by[output], grads[output]);
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
      NodeTask& task = tasks[edge.node.get()];
      if (i < grad_inputs.size()) accumulate(task.grads, *edge.node, edge.input_nr, std::move(grad_inputs[i]));
      if (--task.dependencies == 0) ready.push(edge.node.get());
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
