// Gradients through a compiled function's results. When fn returns tensors that require grad (a
// compiled forward: `auto forward = ember::compile([&](const Tensor& x) { return model->forward(x); })`,
// with loss.backward() called by the caller), the capture also records the backward pass of those
// results, as AOTAutograd does for torch.compile:
//
//   1. After fn returned, autograd runs from its differentiable results, seeded with placeholder
//      gradients that are graph inputs, under the same capture; it stops where the gradients
//      leave fn (a parameter's AccumulateGrad, an input's own grad_fn) and touches no .grad.
//   2. The joint graph is cut in two: the forward (fn's nodes; its outputs grow by the values the
//      backward reads, the "saved" values) and the backward (inputs: one gradient per
//      differentiable result, then the saved values; outputs: one gradient per boundary).
//   3. Each replay runs the forward and gives its differentiable results one autograd node,
//      CompiledBackward, holding the saved values; the engine calls it like any other node, it runs
//      the backward graph and hands the gradients to the boundaries' current edges, so
//      AccumulateGrad fills .grad and an input's history receives its gradient, as in eager mode.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/capture.h"
#include "graph/executor.h"

namespace ember::graph {

// Where one gradient the backward graph computes flows when a replay's backward runs.
struct GradientBoundary {
  bool is_input = false;  // fn's argument `index`, else the forward graph's state input `index`
  int index = 0;
};

// How the backward graph meets the forward and the autograd graph around it.
struct BackwardInterface {
  std::vector<int> differentiable;  // which of fn's results get gradients (one graph input each)
  std::vector<TensorMeta> gradient_metas;  // those results' types: an arriving gradient must match
  std::vector<GradientBoundary> boundaries;  // one per backward output
  int saved_count = 0;  // the forward graph's last outputs, read by the backward graph
};

// The backward half of a captured function, shared by every replay's CompiledBackward node.
struct BackwardProgram {
  BackwardProgram(Executor executor, BackwardInterface interface)
      : executor(std::move(executor)), interface(std::move(interface)) {}
  Executor executor;
  BackwardInterface interface;
  // One run at a time: the replays' CompiledBackward nodes share the executor (its arena and
  // re-pointed buffers), and each call's backward() may run on its own thread.
  std::mutex mutex;
};

// Does a capture whose fn returned `results` need its backward? (a result with autograd history
// whose saved tensors are still there, whatever the caller's grad mode: fn may enable grad itself;
// a training step that already ran loss.backward() on the loss it returns does not.)
bool results_need_backward(const std::vector<Tensor>& results);

// Step 1 and 2 above. `graph` holds fn's capture, finished (outputs, write-backs), and `mode` is
// the mode that recorded it; fn made every autograd node numbered from `first_node` on (see
// autograd::next_sequence_nr). On success, `graph` is the forward graph with the saved values
// appended to its outputs and the result holds the backward graph; a graph break (a gradient hook
// inside fn, a gradient flowing into a tensor fn neither receives nor reads as state) is reported
// through `mode` (fullgraph throws) and the result is empty.
struct CapturedBackward {
  Graph graph;
  BackwardInterface interface;
};
std::optional<CapturedBackward> capture_backward(CaptureMode& mode, Graph& graph, const std::vector<Tensor>& inputs,
                                                 const std::vector<Tensor>& results, uint64_t first_node);

// Step 3: gives the differentiable `results` of one replay (the forward graph's outputs, less the
// saved values at its end, which it takes) a CompiledBackward node.
void attach_compiled_backward(const std::shared_ptr<BackwardProgram>& program, const std::vector<Tensor>& inputs,
                              const Graph& forward, std::vector<Tensor>& outputs);

// The results of a call that runs fn eagerly while its captures serve the later calls (a warm-up,
// the capturing call, a verification trace): each result whose history fn made (nodes numbered
// from `first_node` on; not an argument returned as itself) gets a node named CompiledBackward too,
// which hands its gradient on to that eager history and, as a replay's, refuses a create_graph
// backward. Otherwise a second derivative through the results would work on the first calls and
// fail from the first replay on.
void attach_eager_call_backward(const std::vector<Tensor>& inputs, std::vector<Tensor>& results, uint64_t first_node);

}  // namespace ember::graph
