// Graph passes. Each returns how many nodes it removed (or rewrote) and leaves a graph that
// verify() accepts. ember::compile runs them in the order listed in docs/ARCHITECTURE.md.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"

namespace ember::graph {

// Dead-code elimination: drops nodes none of whose outputs reach an output, a write-back or a
// grad write-back. In-place nodes are always kept (a view taken earlier may read their effect).
int eliminate_dead_code(Graph& graph);

// Common-subexpression elimination: a node with the same op, inputs and attributes as an earlier
// one reuses its outputs. Skips in-place nodes, nodes with per-call host scalars, and nodes whose
// outputs (or views of them) are later mutated, returned or become a .grad, since those buffers
// must stay distinct.
int eliminate_common_subexpressions(Graph& graph);

// Constant folding (graph/constant_folding.cpp): runs each node whose inputs are all constants
// (factories without per-call host scalars, and what is computed from them) once, now; its
// outputs become constants the graph owns. Never folds ops that draw random numbers, in-place
// ops, or values that are returned, mutated or become a .grad. Returns the nodes folded.
int fold_constants(Graph& graph);
// Removes constants no node, output or write-back reads any more. Returns how many.
int drop_unused_constants(Graph& graph);

// Algebraic simplification (graph/simplify.cpp): x*1, x/1, x+0, x-0, mul_scalar(x, 1),
// add_scalar(x, 0), div_scalar(x, 1), neg(neg(x)), to_dtype to x's own dtype, clone(x) and
// transpose(transpose(x)) become x, only where type, shape and buffer semantics are exactly
// kept. Uses of the replaced value are rewired; the dead nodes are left to DCE. Returns the
// rewrites; with `notes`, appends one line per rewrite.
int simplify_algebra(Graph& graph, std::vector<std::string>* notes = nullptr);

// GEMM epilogues (graph/epilogue_fusion.cpp): linear followed by relu / gelu, when that is the
// only reader of linear's output, becomes one linear node with attr activation whose output is
// the activation's value (relu_backward keeps reading it). Returns the nodes removed.
int fuse_gemm_epilogues(Graph& graph, std::vector<std::string>* notes = nullptr);

// Loss fusion (graph/loss_fusion.cpp): cross_entropy and the cross_entropy_backward of the same
// logits, target and attributes become one cross_entropy_with_backward node (both outputs from
// one pass), where the backward's grad exists before the forward runs and no in-place node runs
// between the two, on the CPU (the op's CUDA kernel runs the pair's two kernels in turn).
// Returns the nodes removed; with `notes`, one line per pair.
int fuse_loss_backward(Graph& graph, std::vector<std::string>* notes = nullptr);


}  // namespace ember::graph
