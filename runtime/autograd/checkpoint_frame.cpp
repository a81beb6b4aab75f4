// CheckpointFrame: slots reserved in the forward, filled by one recomputation at the first unpack.
#include "runtime/autograd/checkpoint_frame.h"

#include <algorithm>

#include "runtime/autocast.h"
#include "runtime/dispatch.h"
#include "runtime/error.h"

namespace ember::autograd {

namespace {

// Read for every tensor a node saves: a plain pointer, null outside any checkpoint.
thread_local const ActiveCheckpoint* active = nullptr;

// The generators the function may draw from: the CPU's and those of its inputs' devices.
std::vector<Device> generator_devices(const std::vector<Tensor>& inputs) {
  std::vector<Device> devices{kCPU};
  for (const Tensor& input : inputs)
    if (input.defined() && std::ranges::find(devices, input.device()) == devices.end())
      devices.push_back(input.device());
  return devices;
}

// The generators of `states`' devices as they are now.
std::vector<std::pair<Device, GeneratorState>> current_states(
    const std::vector<std::pair<Device, GeneratorState>>& states) {
  std::vector<std::pair<Device, GeneratorState>> now;
  for (const auto& [device, state] : states) now.emplace_back(device, default_generator(device).get_state());
  return now;
}

// Each change is part of a host effect a capture was told of (or eager code, told nothing).
void set_states(const std::vector<std::pair<Device, GeneratorState>>& states) {
  const HostEffectScope effect;
  for (const auto& [device, state] : states) default_generator(device).set_state(state);
}

// Sets each generator to `states` for its lifetime, then back to where it found them. Inside a
// capture (ember::compile) both changes are host effects: a replay makes them again at the same
// places, so the recomputed random ops draw the forward's numbers at every call, not only the
// first (`replayed` holds the generators' states of the replay in progress).
class RngStatesScope {
 public:
  RngStatesScope(const std::vector<std::pair<Device, GeneratorState>>& states,
                 const std::shared_ptr<ReplayedRngStates>& replayed) {
    if (replayed != nullptr && dispatch_mode_active()) {
      notify_host_effect("checkpoint: the forward's generator states, for the recomputation", [replayed] {
        replayed->found = current_states(replayed->forward);
        set_states(replayed->forward);
      });
      replayed_ = replayed;
    }
    found_ = current_states(states);
    set_states(states);
  }
  ~RngStatesScope() {
    if (replayed_ != nullptr)
      notify_host_effect("checkpoint: the generator states the recomputation found, given back",
                         [replayed = replayed_] { set_states(replayed->found); });
    set_states(found_);
  }
  RngStatesScope(const RngStatesScope&) = delete;
  RngStatesScope& operator=(const RngStatesScope&) = delete;

 private:
  std::vector<std::pair<Device, GeneratorState>> found_;
  std::shared_ptr<ReplayedRngStates> replayed_;
};

}  // namespace

const ActiveCheckpoint* active_checkpoint() { return active; }

ActiveCheckpointScope::ActiveCheckpointScope(std::shared_ptr<CheckpointFrame> frame, bool recomputing)
    : entry_{std::move(frame), recomputing}, previous_(active) {
  active = &entry_;
}

ActiveCheckpointScope::~ActiveCheckpointScope() { active = previous_; }

CheckpointFrame::CheckpointFrame(std::string name, CheckpointFn fn, std::vector<Tensor> inputs, bool preserve_rng_state,
                                 bool determinism_check)
    : name_(std::move(name)),
      fn_(std::move(fn)),
      inputs_(std::move(inputs)),
      preserve_rng_state_(preserve_rng_state),
      determinism_check_(determinism_check),
      autocast_enabled_(autocast_enabled()),
      autocast_dtype_(autocast_dtype()) {
  for (const Tensor& input : inputs_) input_versions_.push_back(input.defined() ? input.version() : 0);
  if (!preserve_rng_state_) return;
  for (Device device : generator_devices(inputs_))
    rng_states_.emplace_back(device, default_generator(device).get_state());
  // A replay of a captured step reads the generators here again, where its forward starts.
  if (dispatch_mode_active()) {
    replayed_rng_states_ = std::make_shared<ReplayedRngStates>();
    notify_host_effect("checkpoint: the generator states the forward starts from",
                       [replayed = replayed_rng_states_, devices = rng_states_] {
                         replayed->forward = current_states(devices);
                       });
  }
}

size_t CheckpointFrame::reserve_slot(const Tensor& tensor, uint64_t version) {
  const std::lock_guard lock(mutex_);
  saved_metas_.push_back({tensor.sizes(), tensor.dtype(), tensor.device()});
  forward_slots_.push_back({tensor, version});
  released_slots_.push_back(false);
  return saved_metas_.size() - 1;
}

void CheckpointFrame::release_slot(size_t slot) {
  const std::lock_guard lock(mutex_);
  internal_assert(slot < released_slots_.size(), "checkpoint: released a slot the forward never reserved");
  released_slots_[slot] = true;
  for (std::vector<SlotValue>* values : {&forward_slots_, &recomputed_})
    if (slot < values->size()) (*values)[slot] = {};
}

void CheckpointFrame::end_forward() {
  const std::lock_guard lock(mutex_);
  forward_running_ = false;
  forward_slots_ = {};  // the activations checkpointing exists to free
  for (const Tensor& input : inputs_) input_versions_after_forward_.push_back(input.defined() ? input.version() : 0);
}

void CheckpointFrame::fill_slot(Tensor tensor, uint64_t version) {
  recomputed_.push_back({std::move(tensor), version});
}

const CheckpointFrame::SlotValue& CheckpointFrame::unpack(size_t slot) {
  const std::lock_guard lock(mutex_);
  if (forward_running_) {
    internal_assert(slot < forward_slots_.size(), "checkpoint: a slot past the forward's saved tensors");
    return forward_slots_[slot];
  }
  if (!recomputed_done_) recompute();
  internal_assert(slot < recomputed_.size(), "checkpoint: a slot past the recomputed tensors");
  return recomputed_[slot];
}

void CheckpointFrame::recompute() {
  check(!recomputing_,
        "{}: backward needed a tensor the checkpointed function saved while that function was being recomputed "
        "(does it run a backward through its own outputs?)",
        name_);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputs_[i].defined() || inputs_[i].version() == input_versions_[i]) continue;
    // The function's own in-place update of an input (refused by PyTorch too) needs another fix
    // than the caller's: clone() inside the function rather than before changing it outside.
    if (i < input_versions_after_forward_.size() && input_versions_after_forward_[i] != input_versions_[i])
      fail("{}: input {} (shape {}) was modified in place by the checkpointed function itself (version {} after its "
           "forward, {} before), so recomputing it would start from the changed input; update a clone() of the input "
           "inside the function instead",
           name_, i, inputs_[i].sizes(), input_versions_after_forward_[i], input_versions_[i]);
    fail("{}: input {} (shape {}) was modified by an in-place operation after the checkpointed forward (version {} "
         "now, {} then), so recomputing the function would not give the forward's values; clone() it first",
         name_, i, inputs_[i].sizes(), inputs_[i].version(), input_versions_[i]);
  }
  recomputed_.clear();
  recomputed_.reserve(saved_metas_.size());
  recomputing_ = true;
  try {
    const RngStatesScope rng(rng_states_, replayed_rng_states_);
    const ActiveCheckpointScope scope(shared_from_this(), /*recomputing=*/true);
    const AutoGradMode grad(true);  // backward runs with grad mode off (or on, with create_graph)
    const AutocastGuard autocast(autocast_dtype_, autocast_enabled_);
    // The forward's inputs without their history, requiring grad as they did: the same nodes record
    // (a node records when an input requires grad) and save the same tensors.
    std::vector<Tensor> detached;
    for (const Tensor& input : inputs_) {
      detached.push_back(input.defined() ? input.detach() : Tensor());
      if (input.defined() && input.requires_grad()) detached.back().requires_grad_();
    }
    fn_(detached);
  } catch (...) {
    recomputing_ = false;
    recomputed_.clear();
    throw;
  }
  recomputing_ = false;
  check_recomputed();
  recomputed_done_ = true;
  // Slots whose nodes were released before this recomputation (run on undefined gradients only,
  // say) are never read.
  for (size_t slot = 0; slot < recomputed_.size(); ++slot)
    if (released_slots_[slot]) recomputed_[slot] = {};
}

void CheckpointFrame::check_recomputed() const {
  check(recomputed_.size() == saved_metas_.size(),
        "{}: recomputing the function saved {} tensors for backward, its forward {}: it must run the same ops each "
        "time (does it branch on host state that changed since?)",
        name_, recomputed_.size(), saved_metas_.size());
  if (!determinism_check_) return;
  for (size_t slot = 0; slot < saved_metas_.size(); ++slot) {
    const TensorMeta& then = saved_metas_[slot];
    const Tensor& now = recomputed_[slot].tensor;
    check(now.sizes() == then.sizes && now.dtype() == then.dtype && now.device() == then.device,
          "{}: tensor {} saved for backward was {} {} on {} in the forward and is {} {} on {} when recomputed: the "
          "function must run the same ops each time",
          name_, slot, then.sizes, then.dtype, then.device, now.sizes(), now.dtype(), now.device());
  }
}

}  // namespace ember::autograd
