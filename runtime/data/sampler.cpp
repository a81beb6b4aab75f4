// Sequential and random samplers, and the Philox-driven permutation behind shuffling.
#include "runtime/data/sampler.h"

#include <numeric>

#include "kernels/philox.h"
#include "runtime/error.h"

namespace ember::data {

SequentialSampler::SequentialSampler(int64_t size, std::source_location where) : size_(size) {
  CallSiteScope site(where);
  check(size >= 0, "SequentialSampler: size must be non-negative, got {}", size);
}

std::vector<int64_t> SequentialSampler::epoch_indices(int64_t) const {
  std::vector<int64_t> indices(static_cast<size_t>(size_));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  return indices;
}

RandomSampler::RandomSampler(int64_t size, uint64_t seed, std::source_location where) : size_(size), seed_(seed) {
  CallSiteScope site(where);
  check(size >= 0, "RandomSampler: size must be non-negative, got {}", size);
}

std::vector<int64_t> RandomSampler::epoch_indices(int64_t epoch) const {
  check(epoch >= 0, "RandomSampler: epoch must be non-negative, got {}", epoch);
  return random_permutation(size_, seed_, static_cast<uint64_t>(epoch));
}

std::vector<int64_t> random_permutation(int64_t size, uint64_t seed, uint64_t stream) {
  check(size >= 0, "random_permutation: size must be non-negative, got {}", size);
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Each Philox block gives two 64-bit draws. Draw d picks the swap partner of position
  // size - 1 - d from [0, size - 1 - d] by a 64x64 -> 128-bit multiply (Lemire's method without
  // the rejection step: its bias, below 2^-32 for any realistic size, does not matter here).
  PhiloxBlock block{};
  for (int64_t draw = 0; draw + 1 < size; ++draw) {
    const uint64_t pair = static_cast<uint64_t>(draw) & 1;
    if (pair == 0) block = philox4x32(seed, static_cast<uint64_t>(draw) >> 1, stream);
    const uint64_t bits = (uint64_t{block.values[2 * pair]} << 32) | block.values[2 * pair + 1];
    const int64_t position = size - 1 - draw;
    const auto span = static_cast<unsigned __int128>(position + 1);
    const auto partner = static_cast<int64_t>((static_cast<unsigned __int128>(bits) * span) >> 64);
    std::swap(order[static_cast<size_t>(position)], order[static_cast<size_t>(partner)]);
  }
  return order;
}

}  // namespace ember::data
