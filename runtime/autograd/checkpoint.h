// Activation checkpointing, torch.utils.checkpoint.checkpoint with use_reentrant=False: run part
// of a model without keeping the tensors its backward needs, and recompute them when backward
// gets there, trading one more forward of that part for its activations' memory.
//
//   Tensor h = ember::utils::checkpoint([&](const Tensor& x) { return block->forward(x); }, x);
//
// The function runs once now, with grad mode on, and its graph is recorded as usual, but every
// tensor a node of it saves for backward is dropped (runtime/autograd/checkpoint_frame.h). The
// first backward that needs one runs the function again on the same inputs, with the random state
// the forward started from (dropout draws the same masks; preserve_rng_state), the forward's
// autocast state and grad mode on, and the rest of backward reads the recomputed tensors.
// Gradients reach the inputs and whatever the function reads (parameters) as without checkpoint;
// autograd::grad, create_graph, retain_graph and nesting work as they do for other code, and so
// does a backward the function runs inside itself (a gradient penalty): until it returns, the
// tensors its nodes saved are held for that, then dropped.
//
// As PyTorch's, with these notes: the function must run the same ops both times (a recomputation
// that saves other tensors is an error naming both counts, and with determinism_check a saved
// tensor of another shape, dtype or device is one too); an input modified in place after the
// forward is an error at the recomputation, but a parameter the function reads is not checked
// (update parameters after backward, as training loops do). Tensors saved by custom autograd
// functions (ctx->save_for_backward) and by in-place ops' view bookkeeping are kept, not dropped.
// Without grad mode the function just runs. Inside ember::compile it checkpoints as in eager mode:
// the capture records the recomputation where backward needs it, so the compiled step recomputes
// too and its memory plan frees the activations after the forward (graph/ir.h, Node::recomputed).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/autograd/checkpoint_frame.h"
#include "runtime/tensor.h"

namespace ember::utils {

struct CheckpointOptions {
  // Restore the generators of the CPU and of the inputs' devices to where the forward found them
  // before recomputing, so random ops (dropout) draw the same values; false saves that bookkeeping
  // when the function draws nothing.
  bool preserve_rng_state = true;
  // Check that each recomputed tensor has the shape, dtype and device the forward's had (PyTorch's
  // determinism_check="default"); the count of saved tensors is always checked.
  bool determinism_check = true;
};

// fn(inputs), checkpointed: its outputs, with history, as fn's own.
std::vector<Tensor> checkpoint(const autograd::CheckpointFn& fn, const std::vector<Tensor>& inputs,
                               CheckpointOptions options = {}, Where where = Where::current());
// The one-tensor form: fn(input), checkpointed.
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input, CheckpointOptions options = {},
                  Where where = Where::current());

namespace detail {
// checkpoint(fn, inputs) whose errors (at the recomputation) begin with `name` rather than
// "checkpoint": checkpoint_sequential names the segment. The caller opens the CallSiteScope.
std::vector<Tensor> checkpoint_named(std::string name, const autograd::CheckpointFn& fn,
                                     const std::vector<Tensor>& inputs, CheckpointOptions options);
}  // namespace detail

}  // namespace ember::utils
