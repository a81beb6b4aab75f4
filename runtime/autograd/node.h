// Autograd graph nodes. Each op call that needs gradients records an OpNode holding what its
// backward rule needs; each leaf that requires grad has one AccumulateGrad node. Edges point from a
// node to the nodes that produced its inputs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ops/registry.h"

namespace ember::autograd {

class Node;

// `grad` after `hook` (a tensor's register_hook): its replacement, which must keep the shape, or
// `grad` itself when the hook returns an undefined tensor.
Tensor run_grad_hook(const GradHook& hook, const Tensor& grad);

struct Edge {
  std::shared_ptr<Node> node;  // null: that input needs no gradient
  uint32_t input_nr = 0;       // which output of `node` the gradient flows into
};

class Node {
 public:
  explicit Node(int num_outputs);
  // Frees the nodes only this one held one after another, not each inside the last one's
  // destructor: a chain of 200,000 nodes (a loss summed over steps without detach()) would
  // otherwise overflow the stack when it is dropped.
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  // Takes one gradient per output of this node (undefined: none arrived) and returns one per edge.
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  // apply() for a create_graph backward: it runs in grad mode and its gradients carry history, so
  // they can be differentiated again. `self` owns this node (a saved output's history points back
  // at it). The default refuses, naming the node: a backward that does not go through
  // differentiable ops (a compiled function's backward graph) would hand out gradients that later
  // derivatives treat as constants, a silently wrong second derivative.
  virtual std::vector<Tensor> apply_with_history(std::vector<Tensor>&& grad_outputs,
                                                 const std::shared_ptr<Node>& self);
  // Frees saved tensors after a backward pass without retain_graph.
  virtual void release_saved() {}
  // Whether release_saved() ran: applying the node again would fail.
  virtual bool saved_released() const { return false; }

  int num_outputs() const { return num_outputs_; }
  uint64_t sequence_nr() const { return sequence_nr_; }

  std::vector<Edge> next_edges;
  // Hooks registered on the non-leaf tensors this node produced, per output.
  std::vector<std::vector<GradHook>> output_hooks;
  // Per output, the tensor that called retain_grad() on it; empty until one does (most nodes
  // never need it, and an eager op should not pay an allocation for it). The engine stores the
  // gradient after every hook of that output ran, as PyTorch runs its retains-grad hook last.
  std::vector<std::weak_ptr<TensorImpl>> retained_by;

 private:
  int num_outputs_;
  uint64_t sequence_nr_;  // creation order: later nodes run first when both are ready
};

class CheckpointFrame;

// A tensor saved for backward, with the version it had when saved. Inside a checkpointed forward
// (runtime/autograd/checkpoint_frame.h) the tensor is not kept: `frame` recomputes it as its slot
// `slot` when backward first needs it.
struct SavedTensor {
  Tensor tensor;
  uint64_t version = 0;
  std::shared_ptr<CheckpointFrame> frame;
  size_t slot = 0;
};

// What a node keeps of `tensor` (at `version`): the tensor, or a checkpoint's placeholder.
SavedTensor saved_for_backward(Tensor tensor, uint64_t version);

// The node of one dispatched op call; its backward is the op's registered BackwardRule.
class OpNode final : public Node {
 public:
  OpNode(const OpDef& op, const Attrs& attrs, int num_inputs);
  std::string name() const override { return op_.name + "_backward"; }
  const OpDef& op() const { return op_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    return run(std::move(grad_outputs), nullptr);
  }
  // The saved tensors get back the history they had when saved (an input its edge, an output this
  // node), so the backward rule's ops record how the gradients depend on them.
  std::vector<Tensor> apply_with_history(std::vector<Tensor>&& grad_outputs,
                                         const std::shared_ptr<Node>& self) override {
    return run(std::move(grad_outputs), &self);
  }
  void release_saved() override;
  bool saved_released() const override { return released_; }

  void save_input(int i, const Tensor& input);
  void save_output(int i, const Tensor& output);
  std::vector<TensorMeta> input_metas;
  std::vector<TensorMeta> output_metas;  // to zero-fill outputs that received no gradient
  std::vector<bool> needs_input_grad;

 private:
  std::vector<Tensor> run(std::vector<Tensor>&& grad_outputs, const std::shared_ptr<Node>* self);
  const Tensor& unpack(const SavedTensor& saved, const char* role, int index) const;

  const OpDef& op_;
  Attrs attrs_;
  std::vector<SavedTensor> saved_inputs_;
  std::vector<SavedTensor> saved_outputs_;
  bool released_ = false;
};

// Adds the incoming gradient into a leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : Node(1), leaf_(std::move(leaf)) {}
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  // As PyTorch under create_graph: .grad becomes a clone of the gradient, or .grad + gradient,
  // both out of place and recorded, so the .grad itself has history.
  std::vector<Tensor> apply_with_history(std::vector<Tensor>&& grad_outputs,
                                         const std::shared_ptr<Node>& self) override;
  // `gradient` after the leaf's hooks (register_hook on the leaf), run from a copy of the list.
  Tensor run_leaf_hooks(Tensor gradient) const;

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// retain_grad(): from now on `tensor` (a non-leaf) keeps the gradient of its grad_fn's output in
// its .grad.
void retain_grad_of(const std::shared_ptr<TensorImpl>& tensor);
// Every change of a tensor's grad_fn goes through here: an in-place op's node, a CopySlices
// rebasing a view's base, a view's remade history, none for detach_(). A retain_grad() on the
// tensor follows it to the new node, so its .grad is the gradient of its latest version
// (PyTorch's retains-grad hook moves the same way; hooks from register_hook stay behind).
void move_retained_grad(TensorImpl& tensor, Node* old_fn, uint32_t old_output);
inline void set_history(TensorImpl& tensor, std::shared_ptr<Node> node, uint32_t output) {
  const std::shared_ptr<Node> old_fn = std::exchange(tensor.grad_fn, std::move(node));
  const uint32_t old_output = std::exchange(tensor.output_nr, output);
  // Most tensors given a history are new op outputs without any autograd metadata.
  if (tensor.autograd_meta && tensor.autograd_meta->retains_grad) move_retained_grad(tensor, old_fn.get(), old_output);
}
// Gives the tensor behind `retainer`, if still alive, `gradient` as (or added to) its .grad.
void store_retained_grad(const std::weak_ptr<TensorImpl>& retainer, const Tensor& gradient);

// The edge through which a gradient for `tensor` flows: its grad_fn, or its leaf accumulator.
Edge gradient_edge(const Tensor& tensor);

// Runs backward from `roots` seeded with `grad_roots` (same length). With create_graph the
// backward runs in grad mode and every node through apply_with_history.
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, bool retain_graph,
                  bool create_graph = false);

// The seeds of a backward pass from `outputs`: grad_outputs (empty, or one per output) checked
// against their outputs (shape, device) and cast to their dtypes; an undefined or missing one is
// ones, for a one-element output only. `function` names the caller in errors (grad.cpp).
std::vector<Tensor> make_seeds(const char* function, const std::vector<Tensor>& outputs,
                               const std::vector<Tensor>& grad_outputs);

// backward(inputs)'s inputs (Tensor::backward), checked as PyTorch does (not empty, each defined
// and requiring grad; `function` names the caller in errors), then each non-leaf retain_grad()ed:
// their gradient edges, for run_backward_into.
std::vector<Edge> accumulation_edges(const char* function, const std::vector<Tensor>& inputs);

// autograd::grad's engine (grad.h): runs only the nodes on a path from the roots to one of
// `inputs` (the inputs' gradient edges) and returns the gradient summed for each, after the hooks
// of its tensor ran; runs no AccumulateGrad, so no .grad changes. Undefined: none arrived.
std::vector<Tensor> run_backward_to(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                                    const std::vector<Edge>& inputs, bool retain_graph, bool create_graph);

// backward(inputs)'s engine: runs only the nodes on a path from the roots to one of `inputs` (the
// inputs' gradient edges) and the inputs' nodes themselves, so a leaf input's AccumulateGrad fills
// its .grad and a non-leaf input's retain_grad() its own; every other .grad stays as it was.
void run_backward_into(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                       const std::vector<Edge>& inputs, bool retain_graph, bool create_graph);

// The node whose backward runs on this thread inside a create_graph backward; null elsewhere.
// The dispatcher reads it to refuse an op without a backward rule there (see refuse_constant_use).
const Node* node_creating_graph();

// Whether the backward pass running on this thread sends a gradient through `edge`: false for a
// null edge, and in autograd::grad or backward(inputs) for one leading to none of the inputs
// (libtorch's task_should_compute_output); true elsewhere.
bool edge_needed_by_backward(const Edge& edge);

// The sequence number the next node will get: every node made later has one at least as large.
uint64_t next_sequence_nr();

// run_backward with retain_graph, except at the nodes `stop` selects: such a node is not run (nor
// its hooks), nothing beyond it is visited, and the gradient summed for each of its outputs is
// handed to `arrived` instead. compile uses it to record a backward pass up to where the
// gradients leave the compiled function, without touching any .grad.
using StopAt = std::function<bool(const Node& node)>;
using GradientArrived = std::function<void(const Node& node, uint32_t output, const Tensor& gradient)>;
void run_backward_until(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                        const StopAt& stop, const GradientArrived& arrived);

}  // namespace ember::autograd
