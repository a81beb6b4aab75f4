// The dispatcher's eager path in three files: dispatch.cpp (modes, the eager call, views),
// dispatch_autograd.cpp (the autograd node of a call) and dispatch_inplace.cpp (in-place ops and
// their checks). These are the functions they share; nothing outside runtime/ should need them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/ops/registry.h"

namespace ember::autograd {
struct OpNode;
}

namespace ember::dispatch_detail {

// Bit i of an OpDef mask. Inputs past bit 31 (cat of many tensors) have no bit: shifting by 32 or
// more would be undefined behaviour.
inline bool has_bit(uint32_t mask, size_t i) { return i < 32 && ((mask >> i) & 1u) != 0; }

// Whether an input the op can differentiate for requires grad (asked on every eager call).
inline bool any_input_requires_grad(const OpCall& call) {
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& input = call.inputs[i];
    if (input.defined() && !has_bit(call.op.nondifferentiable_inputs, i) && input.requires_grad())
      return true;
  }
  return false;
}

// The autograd node of a call whose inputs require grad, with what its backward rule needs.
// In-place ops build it before their kernel runs; a mutated input they save is cloned first, so
// backward sees the value the op read.
std::shared_ptr<autograd::OpNode> create_node(const OpCall& call);
// Makes `node` the grad_fn of the call's floating outputs (integer outputs carry no gradient).
void attach_outputs(const std::shared_ptr<autograd::OpNode>& node, const OpCall& call, TensorList& outputs);
// Both: the outputs of a call whose inputs require grad get their history.
void record_autograd(const OpCall& call, TensorList& outputs);

// Called for an op without a backward rule while a create_graph backward runs a node
// (autograd::node_creating_graph): if its floating result depends on a tensor that requires grad,
// later derivatives would take it for a constant, so the call is refused, naming the node's op.
// Called before the kernel runs (`outputs` are allocated, or an in-place op's targets), so a
// refused call writes nothing.
void refuse_constant_use(const OpCall& call, const TensorList& outputs);

// Runs an in-place op: checks, kernel, version bumps and history (through a view to its base).
TensorList run_inplace(const OpCall& call, Kernel kernel);

// Whether a KernelDeferral is alive on this thread: the caller runs kernels later.
bool kernels_deferred();

}  // namespace ember::dispatch_detail
