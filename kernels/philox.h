// Philox4x32-10, the counter-based generator of Salmon et al. (SC'11): a keyed bijection of a
// 128-bit counter. Element i of a tensor drawn at (seed, offset) is a pure function of
// (seed, offset + i), so CPU threads, CUDA threads and the code generator all produce the same
// numbers whatever the thread count. Usable on host and device.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace ember {

// Round multipliers and Weyl key increments from the Philox paper.
constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxWeyl0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxWeyl1 = 0xBB67AE85u;

struct PhiloxBlock {
  uint32_t values[4];
};

EMBER_HOST_DEVICE uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* high) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *high = static_cast<uint32_t>(product >> 32);
  return static_cast<uint32_t>(product);
}

// Four 32-bit random words for the 128-bit counter (counter_low, counter_high) under `seed`.
EMBER_HOST_DEVICE PhiloxBlock philox4x32(uint64_t seed, uint64_t counter_low, uint64_t counter_high) {
  uint32_t c0 = static_cast<uint32_t>(counter_low), c1 = static_cast<uint32_t>(counter_low >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_high), c3 = static_cast<uint32_t>(counter_high >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t high0, high1;
    const uint32_t low0 = philox_mulhilo(kPhiloxMultiplier0, c0, &high0);
    const uint32_t low1 = philox_mulhilo(kPhiloxMultiplier1, c2, &high1);
    const uint32_t n0 = high1 ^ c1 ^ k0, n2 = high0 ^ c3 ^ k1;
    c0 = n0; c1 = low1; c2 = n2; c3 = low0;
    k0 += kPhiloxWeyl0;
    k1 += kPhiloxWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// The 32-bit word number `index` of the stream (seed, offset): block (offset + index) / 4.
EMBER_HOST_DEVICE uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t index) {
  const uint64_t position = offset + index;
  return philox4x32(seed, position >> 2, 0).values[position & 3];
}

// Uniform in [0, 1) on a grid of 2^bits steps from the word's top `bits` bits (1 <= bits <= 24).
// With `bits` no more than a float type's significand bits (float 24, float16 11, bfloat16 8),
// every value is exact in that type, so storing it never rounds up to 1.
EMBER_HOST_DEVICE float uniform_from_word_bits(uint32_t word, int bits) {
  return static_cast<float>(word >> (32 - bits)) * (1.0f / static_cast<float>(uint32_t{1} << bits));
}

// Uniform float in [0, 1) from a 32-bit word: 24 random mantissa bits.
EMBER_HOST_DEVICE float uniform_from_word(uint32_t word) { return uniform_from_word_bits(word, 24); }

// randint's value from an element's two words: low + (the 64-bit word pair mod range), in unsigned
// arithmetic so that any int64 [low, high) works (range = high - low as uint64, at least 1). Like
// PyTorch's, the modulo is biased by at most range / 2^64: below 2^-32 for ranges under 2^32.
EMBER_HOST_DEVICE int64_t randint_from_words(int64_t low, uint64_t range, uint32_t first, uint32_t second) {
  const uint64_t bits = (static_cast<uint64_t>(first) << 32) | second;
  return static_cast<int64_t>(static_cast<uint64_t>(low) + bits % range);
}

// Uniform double in [0, 1) from two words: 53 random bits.
EMBER_HOST_DEVICE double uniform_double_from_words(uint32_t high, uint32_t low) {
  const uint64_t bits = (static_cast<uint64_t>(high) << 21) ^ (low >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace ember
