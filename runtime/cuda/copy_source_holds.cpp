// The held sources of asynchronous copies (see copy_source_holds.h), with a pool of spare events
// per device: an event belongs to the device it was made on and can only be recorded there.
#include "runtime/cuda/copy_source_holds.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <vector>

namespace ember::cuda {

namespace {

struct Held {
  int device = 0;
  std::unique_ptr<Event> copied;
  Tensor source;
};

struct Holds {
  std::mutex mutex;
  std::vector<Held> held;
  std::array<std::vector<std::unique_ptr<Event>>, kMaxDevices> spare_events;
};

Holds& holds() {
  static Holds* instance = new Holds();  // never destroyed: sources may be released at exit
  return *instance;
}

}  // namespace

void hold_until_copied(Tensor source, const Stream& stream) {
  release_copied_sources();
  Holds& state = holds();
  const int device = stream.device.index;
  std::unique_ptr<Event> copied;
  {
    std::lock_guard lock(state.mutex);
    auto& spare = state.spare_events[device];
    if (!spare.empty()) {
      copied = std::move(spare.back());
      spare.pop_back();
    }
  }
  if (!copied) {
    DeviceGuard guard(stream.device);
    copied = std::make_unique<Event>();
  }
  copied->record(stream);
  std::lock_guard lock(state.mutex);
  state.held.push_back({device, std::move(copied), std::move(source)});
}

void release_copied_sources() {
  Holds& state = holds();
  std::vector<Tensor> released;  // dropped after unlocking: freeing takes the pool's own lock
  {
    std::lock_guard lock(state.mutex);
    // Order does not matter, and std::partition needs no buffer (stable_partition allocates one).
    auto done = std::partition(state.held.begin(), state.held.end(),
                               [](const Held& held) { return !held.copied->query(); });
    for (auto it = done; it != state.held.end(); ++it) {
      released.push_back(std::move(it->source));
      state.spare_events[it->device].push_back(std::move(it->copied));
    }
    state.held.erase(done, state.held.end());
  }
}

size_t held_copy_sources() {
  std::lock_guard lock(holds().mutex);
  return holds().held.size();
}

}  // namespace ember::cuda
