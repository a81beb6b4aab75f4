// The bookkeeping of activation checkpointing (ember::checkpoint, runtime/autograd/checkpoint.h;
// torch.utils.checkpoint with use_reentrant=False). While a checkpointed function runs its
// forward, every tensor an autograd node would save for backward is left out: the node keeps a
// placeholder (the frame and a slot number) instead, so the function's activations are freed once
// it returns and nothing else holds them (until then the frame holds them, for a backward the
// function runs inside itself). The first time backward unpacks a placeholder after that, the
// frame runs the function again on the same inputs, with the forward's random state, grad mode and
// autocast, and this time keeps what the nodes save, in the same order, as the slots' values,
// each until its node is released. The graph the recomputation builds is dropped with its
// outputs; backward goes on through the forward's nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ops/registry.h"
#include "runtime/random/generator.h"
#include "runtime/tensor.h"

namespace ember::autograd {

using CheckpointFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The generators' states a replay of a captured step (ember::compile) read where the forward
// started, for its recomputation, and those the recomputation found and gives back.
struct ReplayedRngStates {
  std::vector<std::pair<Device, GeneratorState>> forward;
  std::vector<std::pair<Device, GeneratorState>> found;
};

class CheckpointFrame : public std::enable_shared_from_this<CheckpointFrame> {
 public:
  // `name` is the caller's label for errors ("checkpoint" or checkpoint_sequential's segment).
  CheckpointFrame(std::string name, CheckpointFn fn, std::vector<Tensor> inputs, bool preserve_rng_state,
                  bool determinism_check);

  // What a node inside the forward keeps for `tensor` (at `version`): a new slot of this frame,
  // whose metadata is remembered for the determinism check. The tensor itself is held only until
  // end_forward(), for a backward the function runs inside itself (autograd::grad of a gradient
  // penalty), which needs the slots saved so far while the function is still running.
  size_t reserve_slot(const Tensor& tensor, uint64_t version);
  // The function returned (or threw): the slots' tensors are dropped, and recomputed when needed.
  void end_forward();
  // During the recomputation: `tensor`, at `version`, is the next slot's value.
  void fill_slot(Tensor tensor, uint64_t version);
  // The node holding `slot` freed its saved tensors (a backward without retain_graph ran it): its
  // value is dropped now, or as soon as it is recomputed, while other nodes keep the frame alive.
  void release_slot(size_t slot);
  // A slot's value and the version it had when saved.
  struct SlotValue {
    Tensor tensor;
    uint64_t version = 0;
  };
  // The value of `slot`: during the forward the tensor it holds, after it the recomputed one (the
  // function is recomputed first if this is the first unpack). The caller checks its version as for
  // any saved tensor: the function may change it in place after saving it, and the recomputed
  // inputs alias the frame's inputs, which the caller may change between two backward passes.
  const SlotValue& unpack(size_t slot);

 private:
  void recompute();
  void check_recomputed() const;

  std::string name_;
  CheckpointFn fn_;
  std::vector<Tensor> inputs_;
  std::vector<uint64_t> input_versions_;
  std::vector<uint64_t> input_versions_after_forward_;  // set by end_forward(), to tell who changed one
  bool preserve_rng_state_;
  bool determinism_check_;
  // The default generators of the inputs' devices and the CPU, as the forward found them.
  std::vector<std::pair<Device, GeneratorState>> rng_states_;
  std::shared_ptr<ReplayedRngStates> replayed_rng_states_;  // inside a capture only
  bool autocast_enabled_;
  DType autocast_dtype_;
  std::vector<TensorMeta> saved_metas_;  // one per slot, from the forward
  std::vector<SlotValue> forward_slots_;  // one per slot, until end_forward()
  std::vector<SlotValue> recomputed_;     // one per slot, once recomputed
  std::vector<bool> released_slots_;      // one per slot: release_slot() was called
  bool forward_running_ = true;
  bool recomputed_done_ = false;
  bool recomputing_ = false;
  // Two threads' backwards may unpack one frame's slots at once. Recursive: a backward inside the
  // recomputation that reached this frame again gets recompute()'s error, not a deadlock.
  std::recursive_mutex mutex_;
};

// The frame whose forward (recomputing = false) or recomputation (true) runs on this thread, the
// innermost when checkpoints nest; null outside any. Read for every tensor a node saves.
struct ActiveCheckpoint {
  std::shared_ptr<CheckpointFrame> frame;
  bool recomputing = false;
};
const ActiveCheckpoint* active_checkpoint();

// Makes `frame` the active checkpoint for its lifetime, restoring the enclosing one after.
class ActiveCheckpointScope {
 public:
  ActiveCheckpointScope(std::shared_ptr<CheckpointFrame> frame, bool recomputing);
  ~ActiveCheckpointScope();
  ActiveCheckpointScope(const ActiveCheckpointScope&) = delete;
  ActiveCheckpointScope& operator=(const ActiveCheckpointScope&) = delete;

 private:
  ActiveCheckpoint entry_;
  const ActiveCheckpoint* previous_;
};

}  // namespace ember::autograd
