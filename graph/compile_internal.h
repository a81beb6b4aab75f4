// Internal to the compile stage's CompiledFunction (compile.cpp, compile_guards.cpp,
// dynamic_shapes.cpp): helpers over guards, entries and the caller's inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/compile.h"

namespace ember::graph {

const Storage* storage_of(const TensorImpl& impl);

// Tensor::requires_grad without a handle (no reference count traffic per state per call).
bool requires_grad(const TensorImpl& impl);
// Gradient hooks registered on a leaf (register_hook), which a captured backward traced, and how
// many of them were removed since (remove_hook). Both only grow, so a hook registered or removed
// after a capture always changes the pair.
HookCount hook_count(const TensorImpl& impl);

// The caller's inputs, then the current .grad of each GradInput's parameter (undefined if unset).
std::vector<Tensor> with_grad_inputs(const Graph& graph, const std::vector<Tensor>& inputs);

// Whether `a` and `b` share bytes (runtime/memory/overlap.h): disjoint parts of one storage do
// not (a compiled replay installs all its gradients as slices of one arena).
bool shares_memory(const Tensor& a, const std::shared_ptr<TensorImpl>& b);

// The aliasing pattern of the graph inputs (the caller's, then the .grad inputs) and the state
// tensors: every input that shares bytes with an earlier input or a state tensor, and how, sorted.
// A graph captured with two arguments over the same bytes treats a write into one as a change of
// the other, one captured with the same tensor twice reads both through one value, and one
// captured with separate memory does neither: each pattern is its own variant, as with PyTorch's
// duplicate-input and tensor-aliasing guards. Costs O((inputs + states) log inputs), plus the pairs.
void memory_sharing(const std::vector<Tensor>& inputs, const std::vector<std::shared_ptr<TensorImpl>>& states,
                    std::vector<SharedMemory>& pattern);

CapturedArgument captured_argument(const Tensor& argument);
// The caller's arguments a replay of `guards` cannot vouch for: each Unverified argument whose
// captured tensor still lives and which `inputs` passes apart from it. One whose captured tensor
// died becomes Free.
void unverified_arguments(Guards& guards, const std::vector<Tensor>& inputs, std::vector<int>& unverified);

// The bytes of the executor's planned arena (0 when it dispatches).
int64_t arena_bytes(const Executor& executor);

}  // namespace ember::graph
