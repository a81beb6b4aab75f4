// Generator: a Philox stream position (seed, offset) per device. Ops that draw random numbers
// reserve a range of the stream (reserve()) and compute element i from (seed, offset + i), which
// makes results independent of thread count and identical on CPU and CUDA.
#pragma once

#include <cstdint>
#include <mutex>

#include "runtime/device.h"

namespace ember {

struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  friend bool operator==(const GeneratorState&, const GeneratorState&) = default;
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : state_{seed, 0} {}

  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  GeneratorState get_state() const;
  void set_state(const GeneratorState& state);

  // Reserves `words` 32-bit words of the stream and returns where they start.
  GeneratorState reserve(uint64_t words);

  // Host draws (for shuffles and init): consume the stream like an op would.
  uint32_t next_word();
  double next_uniform();  // [0, 1)

 private:
  mutable std::mutex mutex_;
  GeneratorState state_;
};

// The default generator of a device (one per device, created on first use).
Generator& default_generator(Device device = kCPU);

// Seeds every device's default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace ember
