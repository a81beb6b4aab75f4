// The guards of a compiled entry (ember::compile, graph/compile.h): everything its capture
// assumed about the call, which a later call must match to replay it (compile_guards.cpp).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace ember::graph {

// How a graph input shares memory with another input or a state tensor.
enum class Sharing : uint8_t {
  Same,       // one tensor (one TensorImpl) twice: the capture read both through one graph value
  SameBytes,  // another tensor over the same bytes: storage, offset, sizes, strides and dtype
  Overlap,    // some bytes in common, in other layouts
};

// One pair of an aliasing pattern: graph input `input` shares memory with `other`, an earlier
// graph input or a state tensor (numbered after the inputs).
struct SharedMemory {
  int input = 0;
  int other = 0;
  Sharing how = Sharing::Overlap;
  auto operator<=>(const SharedMemory&) const = default;
};

// A caller's argument as captured. fn may read that same tensor itself, not through its parameter
// (a state tensor passed as the argument, or a detach() of it): the capture then read both as the
// argument's one graph value, which later calls may pass apart. Nothing in the capture tells the
// two cases apart, so the first call with another argument while the captured one still lives is
// traced again to find out (CompiledFunction::call): the argument is then free, or pinned to the
// captured buffer. One no longer alive cannot be read by fn any more: free.
struct CapturedArgument {
  enum class Binding : uint8_t { Unverified, Free, Pinned };
  std::weak_ptr<Storage> storage;
  const Storage* address = nullptr;  // storage's, compared while it lives
  int64_t offset = 0;
  Dims sizes;
  Dims strides;
  DType dtype = DType::Float32;
  Binding binding = Binding::Unverified;
  // Whether `impl` views the captured bytes with the captured geometry.
  bool holds(const TensorImpl& impl) const;
};

// A state tensor's gradient hooks: how many were registered, how many of those were removed.
struct HookCount {
  size_t registered = 0;
  size_t removed = 0;
  size_t live() const { return registered - removed; }
  bool operator==(const HookCount&) const = default;
};

// Everything the trace assumed; a call that disagrees recompiles.
struct Guards {
  std::vector<TensorMeta> inputs;
  // Which inputs and state tensors require grad: it decides which gradients the graph computes
  // (a parameter frozen after the capture must not receive one).
  std::vector<bool> inputs_require_grad;
  std::vector<bool> states_require_grad;
  // Which inputs were contiguous, and a non-contiguous one's strides: reshape() and contiguous()
  // copy or alias by the layout, and the graph holds the choice made at capture (a view replayed
  // on other strides fails, a copy replayed where the capture aliased loses writes through the
  // alias, an in-place update replayed on an expanded input writes one address many times).
  std::vector<bool> inputs_contiguous;
  std::vector<Dims> inputs_strides;  // empty for a contiguous input
  // Every pair of a graph input and an earlier input or a state tensor that shared memory, sorted
  // (see memory_sharing in compile_internal.h). A replay must share the same way.
  std::vector<SharedMemory> shared_memory;
  // Per caller argument (not the .grad inputs after them): see CapturedArgument.
  std::vector<CapturedArgument> arguments;
  // Arguments that must have no .grad: the graph installs their whole gradient, where backward
  // adds to a .grad that is there (a call that finds one captures the accumulating variant).
  std::vector<int> arguments_without_grad;
  // Host state the captured code branched on (a Dropout's training flag): each must still hold.
  std::vector<HostGuard> host;
  std::vector<TensorMeta> states;  // the bound state tensors' types when captured
  // Gradient hooks on each state tensor when captured: backward traced them (their tensor ops
  // are in the graph), so a hook added or removed since must recompile.
  std::vector<HookCount> states_hooks;
  // References to each state tensor held by the compiled entry itself (its graphs and executors):
  // a state with no more than these is no longer held by its owner (a .grad replaced by a new
  // tensor, a parameter swapped out of its module), and replaying would read a stale tensor.
  std::vector<long> states_entry_refs;
  bool grad_mode = true;
  bool autocast = false;  // autocast on, and its dtype: the graph holds the casts it made
  DType autocast_dtype = kBFloat16;
  // set_allow_tf32 when captured: a CUDA graph replay keeps the GEMMs' compute type of its capture.
  bool allow_tf32 = false;
};

// The guards for a log or explain(): "input 0: [32, 100] float32 on cpu (dims 0 dynamic), ...;
// grad mode on; autocast off; 4 state tensors; host: ...".
std::string describe_guards(const Guards& guards, std::span<const uint32_t> dynamic_dims);

// Why `inputs` and the current state fail `guards`, or "" when they pass. `free_dims[i]` marks
// dims of input i whose size may differ (same rank).
std::string guard_failure(const Guards& guards, const Graph& graph, const std::vector<Tensor>& inputs,
                          std::span<const uint32_t> free_dims = {});
// guard_failure(...).empty() without formatting a reason (the check of every call).
bool guards_hold(const Guards& guards, const Graph& graph, const std::vector<Tensor>& inputs,
                 std::span<const uint32_t> free_dims = {});

}  // namespace ember::graph
