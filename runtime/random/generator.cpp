// Generator state and the per-device default generators.
#include "runtime/random/generator.h"

#include <map>
#include <memory>

#include <fmt/format.h>

#include "kernels/philox.h"
#include "runtime/dispatch.h"

namespace ember {

// A compiled replay draws from wherever the generator stands: reseeding one generator inside the
// compiled function is a graph break (ember::manual_seed, which reseeds them all, is replayed).
void Generator::manual_seed(uint64_t seed) {
  if (dispatch_mode_active()) notify_host_state_change(fmt::format("Generator::manual_seed({})", seed));
  std::lock_guard lock(mutex_);
  state_ = {seed, 0};
}

uint64_t Generator::seed() const {
  std::lock_guard lock(mutex_);
  return state_.seed;
}

GeneratorState Generator::get_state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

void Generator::set_state(const GeneratorState& state) {
  if (dispatch_mode_active())
    notify_host_state_change(fmt::format("Generator::set_state(seed {}, offset {})", state.seed, state.offset));
  std::lock_guard lock(mutex_);
  state_ = state;
}

GeneratorState Generator::reserve(uint64_t words) {
  std::lock_guard lock(mutex_);
  GeneratorState start = state_;
  // Keep every reservation aligned to a whole Philox block so kernels can draw 4 words at once.
  state_.offset += (words + 3) / 4 * 4;
  return start;
}

uint32_t Generator::next_word() {
  GeneratorState at = reserve(1);
  return philox_word(at.seed, at.offset, 0);
}

double Generator::next_uniform() {
  GeneratorState at = reserve(2);
  return uniform_double_from_words(philox_word(at.seed, at.offset, 0),
                                   philox_word(at.seed, at.offset, 1));
}

namespace {
std::mutex generators_mutex;
uint64_t initial_seed = 67280421310721ull;  // what manual_seed last set; new generators start here
std::map<std::pair<int, int>, std::unique_ptr<Generator>>& generators() {
  static auto* instance = new std::map<std::pair<int, int>, std::unique_ptr<Generator>>;
  return *instance;
}

void reseed_all(uint64_t seed) {
  HostEffectScope effect;  // the generators' own reseeding below is this effect, not a change of its own
  std::lock_guard lock(generators_mutex);
  initial_seed = seed;  // devices whose generator does not exist yet start from this seed too
  for (auto& [key, generator] : generators()) generator->manual_seed(seed);
}

}  // namespace

Generator& default_generator(Device device) {
  std::lock_guard lock(generators_mutex);
  auto& slot = generators()[{static_cast<int>(device.type), device.index}];
  if (!slot) slot = std::make_unique<Generator>(initial_seed);
  return *slot;
}

void manual_seed(uint64_t seed) {
  // Inside a compiled function a replay seeds again at the same place, before the random ops
  // after it reserve their ranges, so a replay draws what an eager call would.
  if (dispatch_mode_active())
    notify_host_effect(fmt::format("manual_seed({})", seed), [seed] { reseed_all(seed); });
  reseed_all(seed);
}

}  // namespace ember
