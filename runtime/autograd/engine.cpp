// The backward engine: counts dependencies from the roots, then runs each node once all the
// gradients flowing into it have been summed, latest-created first. autograd::grad runs only the
// nodes that lead to its inputs and collects their gradients instead of accumulating them;
// backward(inputs) runs only the nodes that lead to its inputs, and the inputs' own.
#include <queue>
#include <utility>
#include <unordered_map>
#include <unordered_set>

#include "runtime/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::autograd {

namespace {

thread_local const Node* creating_graph = nullptr;

struct LaterFirst {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

// What the engine tracks for each node reachable from the roots, in one map (one allocation per
// node rather than one per table).
struct NodeTask {
  int dependencies = 0;       // edges into the node from nodes that have not run yet
  bool seen = false;          // reached by the dependency count's walk
  // autograd::grad and backward(inputs) only: whether the node leads to an input or is one's
  // node in backward(inputs) (it runs), and which of autograd::grad's inputs' edges point at it
  // (their gradients are taken from it). A node with neither is never visited.
  bool needed = false;
  std::vector<size_t> captures;
  std::vector<Tensor> grads;  // gradients summed so far, one slot per output (sized on arrival)
  std::shared_ptr<Node> owner;  // create_graph only: what apply_with_history gets as `self`
  bool visited() const { return needed || !captures.empty(); }
};
using Tasks = std::unordered_map<Node*, NodeTask>;

// The nodes of the autograd::grad or backward(inputs) pass running on this thread, null in a full
// backward: edge_needed_by_backward reads which of them the pass runs.
thread_local const Tasks* selective_tasks = nullptr;

class PublishedTasks {
 public:
  explicit PublishedTasks(const Tasks* tasks) : previous_(std::exchange(selective_tasks, tasks)) {}
  ~PublishedTasks() { selective_tasks = previous_; }
  PublishedTasks(const PublishedTasks&) = delete;
  PublishedTasks& operator=(const PublishedTasks&) = delete;

 private:
  const Tasks* previous_;
};

// How one backward pass runs.
struct Pass {
  bool retain_graph = false;
  bool create_graph = false;
  const StopAt* stop = nullptr;                  // run_backward_until
  const GradientArrived* arrived = nullptr;
  // autograd::grad: whose gradients to return, and where (one per input); backward(inputs):
  // whose nodes to run, with `captured` null.
  const std::vector<Edge>* inputs = nullptr;
  std::vector<Tensor>* captured = nullptr;
};

// Counts how many edges point at each node reachable from the roots (not beyond a stop node).
void count_dependencies(Tasks& tasks, const std::vector<Node*>& roots, const Pass& pass) {
  std::vector<Node*> stack = roots;
  for (Node* root : roots) tasks[root].seen = true;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (pass.stop && (*pass.stop)(*node)) continue;
    for (const Edge& edge : node->next_edges) {
      if (!edge.node) continue;
      NodeTask& task = tasks[edge.node.get()];
      ++task.dependencies;
      if (!task.seen) {
        task.seen = true;
        if (pass.create_graph) task.owner = edge.node;
        stack.push_back(edge.node.get());
      }
    }
  }
}

// Marks the inputs' nodes as captured (autograd::grad) or as needed (backward(inputs): they run,
// so a leaf's AccumulateGrad fills its .grad, as PyTorch's engine), and every node with a path to
// one of them as needed (a depth-first walk; a node is needed once a child is needed or captured).
void mark_needed(Tasks& tasks, const std::vector<Node*>& roots, const std::vector<Edge>& inputs, bool run_inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto found = tasks.find(inputs[i].node.get());
    if (found == tasks.end()) continue;  // not reached from the roots: gets nothing
    if (run_inputs)
      found->second.needed = true;
    else
      found->second.captures.push_back(i);
  }
  struct Frame {
    Node* node;
    size_t next_edge;
  };
  std::unordered_set<Node*> walked;
  std::vector<Frame> stack;
  for (Node* root : roots)
    if (walked.insert(root).second) stack.push_back({root, 0});
  while (!stack.empty()) {
    Frame& top = stack.back();
    Node* node = top.node;
    if (top.next_edge < node->next_edges.size()) {
      Node* child = node->next_edges[top.next_edge++].node.get();
      if (child != nullptr && walked.insert(child).second) stack.push_back({child, 0});  // invalidates top
      continue;
    }
    stack.pop_back();
    NodeTask& task = tasks[node];
    for (const Edge& edge : node->next_edges)
      if (edge.node && tasks[edge.node.get()].visited()) task.needed = true;
  }
}

// Sums `gradient` into output `slot` of the node whose gradients `buffer` collects.
void accumulate(std::vector<Tensor>& buffer, const Node& node, uint32_t slot, Tensor gradient) {
  if (buffer.empty()) buffer.resize(static_cast<size_t>(node.num_outputs()));
  if (!gradient.defined()) return;
  Tensor& current = buffer[slot];
  current = current.defined() ? add(current, gradient) : std::move(gradient);
}

// The hooks of the tensors `node` produced, then retain_grad(), on the gradients that arrived.
void run_tensor_hooks(Node& node, std::vector<Tensor>& grads) {
  for (int output = 0; output < node.num_outputs(); ++output) {
    // By index, each hook copied before it runs: a hook may register another on this tensor,
    // which grows the list under it (the new one runs from the next backward on).
    const std::vector<GradHook>& hooks = node.output_hooks[output];
    for (size_t h = 0, registered = hooks.size(); h < registered && grads[output].defined(); ++h) {
      const GradHook hook = hooks[h];
      grads[output] = run_grad_hook(hook, grads[output]);
    }
    // retain_grad() sees the gradient every hook has shaped, whenever it was called.
    if (static_cast<size_t>(output) < node.retained_by.size() && grads[output].defined())
      store_retained_grad(node.retained_by[output], grads[output]);
  }
}

// Hands the gradient of each input whose edge points at `node` to autograd::grad's results.
void capture(const NodeTask& task, const std::vector<Tensor>& grads, const Pass& pass) {
  for (size_t input : task.captures) (*pass.captured)[input] = grads[(*pass.inputs)[input].input_nr];
}

// Marks the thread as running `node` inside a create_graph backward (see node_creating_graph).
class CreatingGraph {
 public:
  explicit CreatingGraph(const Node* node) : previous_(std::exchange(creating_graph, node)) {}
  ~CreatingGraph() { creating_graph = previous_; }
  CreatingGraph(const CreatingGraph&) = delete;
  CreatingGraph& operator=(const CreatingGraph&) = delete;

 private:
  const Node* previous_;
};

// Runs `node` on its summed gradients: apply(), or apply_with_history() for create_graph.
std::vector<Tensor> run_node(Node& node, NodeTask& task, std::vector<Tensor>&& grads, const Pass& pass) {
  if (!pass.create_graph) return node.apply(std::move(grads));
  // An AccumulateGrad records only a clone or a sum (both differentiable); what else runs inside
  // it is the leaf's hooks, user code like a non-leaf's hooks (run outside any node), not a
  // backward rule that refuse_constant_use holds to ops with backward rules.
  const bool accumulates = dynamic_cast<const AccumulateGrad*>(&node) != nullptr;
  const CreatingGraph running(accumulates ? nullptr : &node);
  return node.apply_with_history(std::move(grads), task.owner);
}

void execute(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, const Pass& pass) {
  // Backward math is recorded only to differentiate it again (create_graph).
  const AutoGradMode grad_mode(pass.create_graph);
  const CreatingGraph outside_nodes(nullptr);  // a plain backward inside a create_graph one's hook
  // Backward ops run in the dtypes their forward ops chose; autocast would recast them.
  AutocastGuard no_autocast(autocast_dtype(), false);
  Tasks tasks;
  std::vector<Node*> root_nodes;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge edge = gradient_edge(roots[i]);
    if (!edge.node) continue;
    auto [slot, inserted] = tasks.try_emplace(edge.node.get());
    if (inserted) root_nodes.push_back(edge.node.get());
    accumulate(slot->second.grads, *edge.node, edge.input_nr, grad_roots[i]);
    slot->second.owner = std::move(edge.node);  // also keeps the root alive
  }

  count_dependencies(tasks, root_nodes, pass);
  const bool selective = pass.inputs != nullptr;
  if (selective) mark_needed(tasks, root_nodes, *pass.inputs, /*run_inputs=*/pass.captured == nullptr);
  const PublishedTasks published(selective ? &tasks : nullptr);  // a nested backward publishes its own
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (Node* root : root_nodes)
    if (tasks[root].dependencies == 0 && (!selective || tasks[root].visited())) ready.push(root);

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    NodeTask& task = tasks[node];  // stays valid: unordered_map never moves its elements
    // Moving the gradients out frees them with this step; the entry itself stays until the end.
    std::vector<Tensor> grads = std::move(task.grads);
    grads.resize(static_cast<size_t>(node->num_outputs()));
    if (pass.stop && (*pass.stop)(*node)) {
      for (int output = 0; output < node->num_outputs(); ++output)
        if (grads[output].defined()) (*pass.arrived)(*node, static_cast<uint32_t>(output), grads[output]);
      continue;
    }
    if (selective && !task.needed) {
      // An input's node that leads to no other input: its tensor's hooks run (a leaf's too), its
      // gradient is taken, the node itself does not run (an AccumulateGrad would fill .grad).
      if (auto* accumulator = dynamic_cast<AccumulateGrad*>(node); accumulator && grads[0].defined())
        grads[0] = accumulator->run_leaf_hooks(std::move(grads[0]));
      run_tensor_hooks(*node, grads);
      capture(task, grads, pass);
      continue;
    }
    // As PyTorch's engine: a node that also runs hands over its gradients before its hooks.
    if (selective) capture(task, grads, pass);
    run_tensor_hooks(*node, grads);
    bool any_gradient = false;
    for (const Tensor& grad : grads) any_gradient = any_gradient || grad.defined();
    // A node reached only by undefined gradients contributes nothing (e.g. an unused output).
    std::vector<Tensor> grad_inputs;
    if (any_gradient) grad_inputs = run_node(*node, task, std::move(grads), pass);
    if (!pass.retain_graph) node->release_saved();
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& edge = node->next_edges[i];
      if (!edge.node) continue;
      NodeTask& next = tasks[edge.node.get()];
      if (selective && !next.visited()) continue;  // leads to no input: never runs
      if (i < grad_inputs.size()) accumulate(next.grads, *edge.node, edge.input_nr, std::move(grad_inputs[i]));
      if (--next.dependencies == 0) ready.push(edge.node.get());
    }
  }
}

}  // namespace

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, bool retain_graph,
                  bool create_graph) {
  execute(roots, grad_roots, Pass{.retain_graph = retain_graph, .create_graph = create_graph});
}

std::vector<Tensor> run_backward_to(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                                    const std::vector<Edge>& inputs, bool retain_graph, bool create_graph) {
  std::vector<Tensor> captured(inputs.size());
  execute(roots, grad_roots,
          Pass{.retain_graph = retain_graph, .create_graph = create_graph, .inputs = &inputs, .captured = &captured});
  return captured;
}

void run_backward_into(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                       const std::vector<Edge>& inputs, bool retain_graph, bool create_graph) {
  execute(roots, grad_roots, Pass{.retain_graph = retain_graph, .create_graph = create_graph, .inputs = &inputs});
}

void run_backward_until(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                        const StopAt& stop, const GradientArrived& arrived) {
  execute(roots, grad_roots, Pass{.retain_graph = true, .stop = &stop, .arrived = &arrived});
}

const Node* node_creating_graph() { return creating_graph; }

bool edge_needed_by_backward(const Edge& edge) {
  if (!edge.node) return false;
  if (selective_tasks == nullptr) return true;
  const auto found = selective_tasks->find(edge.node.get());
  return found != selective_tasks->end() && found->second.visited();
}

}  // namespace ember::autograd
