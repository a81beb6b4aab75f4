// Loss fusion: cross_entropy(z, t) and cross_entropy_backward(g, z, t) with the same attributes
// become one cross_entropy_with_backward(g, z, t) -> (loss, grad_z) node, which computes the
// softmax's exponentials once for both (kernels/cpu/cross_entropy_kernels.cpp) and gives each
// output the bits its own op would. A training step captures the pair whenever it calls
// backward() on a cross-entropy loss; eager execution cannot merge them, since the backward
// runs only once autograd reaches it.
#include <fmt/format.h>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "runtime/ops/registry.h"

namespace ember::graph {

namespace {

bool same_loss_attrs(const Attrs& a, const Attrs& b) {
  return a.get<int64_t>("reduction") == b.get<int64_t>("reduction") &&
         a.get<int64_t>("ignore_index") == b.get<int64_t>("ignore_index") &&
         a.get<double>("label_smoothing") == b.get<double>("label_smoothing");
}

bool plain(const Node& node) { return !node.refresh && node.effects.empty(); }

}  // namespace

int fuse_loss_backward(Graph& graph, std::vector<std::string>* notes) {
  const OpDef& fused_op = lookup_op("cross_entropy_with_backward");
  // Which node produces each value (-1: a graph input, state input or constant).
  std::vector<int> producer(graph.values.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (ValueId output : graph.nodes[n].outputs) producer[output] = static_cast<int>(n);

  std::vector<bool> removed(graph.nodes.size(), false);
  int fused = 0;
  for (size_t b = 0; b < graph.nodes.size(); ++b) {
    const Node& backward = graph.nodes[b];
    if (backward.op->name != "cross_entropy_backward" || !plain(backward)) continue;
    const ValueId grad = backward.inputs[0], logits = backward.inputs[1], target = backward.inputs[2];
    // The forward: an earlier cross_entropy of the same logits and target.
    int f = producer[logits] < 0 ? 0 : producer[logits] + 1;
    for (; f < static_cast<int>(b); ++f) {
      const Node& node = graph.nodes[f];
      if (!removed[f] && node.op->name == "cross_entropy" && plain(node) && node.inputs[0] == logits &&
          node.inputs[1] == target && same_loss_attrs(node.attrs, backward.attrs))
        break;
    }
    if (f == static_cast<int>(b)) continue;
    // On CUDA the fused op runs the pair's two kernels in turn: nothing to gain.
    const Device device = graph.values[logits].meta.device;
    if (device.type != DeviceType::CPU) {
      if (notes != nullptr)
        notes->push_back(fmt::format("not fused: cross_entropy %{} with its backward: no one-pass kernel on {}",
                                     graph.nodes[f].outputs[0], device));
      continue;
    }
    // The fused node runs where the forward did, so the loss's gradient must exist by then (it
    // is a constant or input in a training step; a gradient computed from the loss cannot fuse).
    if (producer[grad] >= f) {
      if (notes != nullptr)
        notes->push_back(fmt::format("not fused: cross_entropy %{}: its backward's grad %{} is computed after it",
                                     graph.nodes[f].outputs[0], grad));
      continue;
    }
    // Moving the backward's reads up to the forward must not move them across a write: the IR
    // keeps a write through a view as a write to its base's buffer, which the value ids do not
    // show. A training step has none between its loss and the loss's backward.
    int writer = f + 1;
    while (writer < static_cast<int>(b) && graph.nodes[writer].op->kind != OpKind::InPlace) ++writer;
    if (writer < static_cast<int>(b)) {
      if (notes != nullptr)
        notes->push_back(fmt::format("not fused: cross_entropy %{}: the in-place {} runs before its backward",
                                     graph.nodes[f].outputs[0], graph.nodes[writer].op->name));
      continue;
    }
    Node& forward = graph.nodes[f];
    if (notes != nullptr)
      notes->push_back(fmt::format("fused: cross_entropy %{} and cross_entropy_backward %{} into "
                                   "cross_entropy_with_backward",
                                   forward.outputs[0], backward.outputs[0]));
    forward.op = &fused_op;
    forward.inputs = {grad, logits, target};
    forward.outputs = {forward.outputs[0], backward.outputs[0]};
    graph.values[backward.outputs[0]].output = 1;
    removed[b] = true;
    ++fused;
  }
  remove_nodes(graph, removed);
  return fused;
}

}  // namespace ember::graph
