// Sequential reads of a Philox stream on the CPU, one block per four words.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/philox.h"

namespace ember::cpu {

// philox4x32 for kPhiloxLanes consecutive counters (first, first + 1, ...; counter_high 0):
// words[4 * lane + j] is philox4x32(seed, first + lane, 0).values[j]. One block is a chain of ten
// dependent multiplies; independent lanes in plain loops let the compiler run them side by side
// in vector registers instead of waiting on each multiply's latency.
constexpr int kPhiloxLanes = 16;

inline void philox4x32_lanes(uint64_t seed, uint64_t first, uint32_t* words) {
  uint32_t c0[kPhiloxLanes], c1[kPhiloxLanes], c2[kPhiloxLanes], c3[kPhiloxLanes];
  for (int lane = 0; lane < kPhiloxLanes; ++lane) {
    const uint64_t counter = first + static_cast<uint64_t>(lane);
    c0[lane] = static_cast<uint32_t>(counter);
    c1[lane] = static_cast<uint32_t>(counter >> 32);
    c2[lane] = 0;
    c3[lane] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
#pragma omp simd
    for (int lane = 0; lane < kPhiloxLanes; ++lane) {
      const uint64_t product0 = uint64_t{kPhiloxMultiplier0} * c0[lane];
      const uint64_t product1 = uint64_t{kPhiloxMultiplier1} * c2[lane];
      const uint32_t n0 = static_cast<uint32_t>(product1 >> 32) ^ c1[lane] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(product0 >> 32) ^ c3[lane] ^ k1;
      c1[lane] = static_cast<uint32_t>(product1);
      c3[lane] = static_cast<uint32_t>(product0);
      c0[lane] = n0;
      c2[lane] = n2;
    }
    k0 += kPhiloxWeyl0;
    k1 += kPhiloxWeyl1;
  }
  for (int lane = 0; lane < kPhiloxLanes; ++lane) {
    words[4 * lane] = c0[lane];
    words[4 * lane + 1] = c1[lane];
    words[4 * lane + 2] = c2[lane];
    words[4 * lane + 3] = c3[lane];
  }
}

// Reads the stream (seed, offset) word by word from word `first`. philox_word computes a whole
// four-word block for each word it returns; the stream computes kPhiloxLanes blocks at a time,
// each once, and its words are exactly philox_word(seed, offset, first), (..., first + 1), ...
class PhiloxStream {
 public:
  PhiloxStream(uint64_t seed, uint64_t offset, uint64_t first) : seed_(seed), position_(offset + first) { refill(); }

  uint32_t next() {
    if (position_ - buffer_start_ == kWords) refill();
    return words_[position_++ - buffer_start_];
  }

  // The next `count` words into `out`.
  void read(uint32_t* out, int64_t count) {
    while (count > 0) {
      if (position_ - buffer_start_ == kWords) refill();
      const uint64_t at = position_ - buffer_start_;
      const int64_t take = std::min<int64_t>(count, static_cast<int64_t>(kWords - at));
      std::copy_n(words_ + at, take, out);
      out += take;
      count -= take;
      position_ += static_cast<uint64_t>(take);
    }
  }

 private:
  static constexpr uint64_t kWords = 4 * kPhiloxLanes;
  void refill() {
    buffer_start_ = position_ & ~uint64_t{3};
    philox4x32_lanes(seed_, position_ >> 2, words_);
  }

  uint64_t seed_;
  uint64_t position_;
  uint64_t buffer_start_ = 0;
  uint32_t words_[kWords];
};

}  // namespace ember::cpu
