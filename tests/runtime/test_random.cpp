// Philox known answers, generator state save/replay, per-device generators, and random tensors
// that do not depend on the thread count.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "kernels/philox.h"
#include "runtime/ember.h"

namespace test_random {

using namespace ember;

namespace {

// Restores the thread count a test changed.
struct ThreadCountGuard {
  int saved = get_num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

std::vector<uint32_t> block_words(const PhiloxBlock& block) {
  return {block.values[0], block.values[1], block.values[2], block.values[3]};
}

}  // namespace

// Known-answer vectors of Random123 (kat_vectors, philox4x32 with 10 rounds). The 128-bit counter
// is words (c0, c1, c2, c3) = (low and high of counter_low, low and high of counter_high); the
// key is (low, high) of the seed.
TEST_CASE("philox4x32-10 matches the Random123 known-answer vectors") {
  CHECK(block_words(philox4x32(0, 0, 0)) ==
        std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(block_words(philox4x32(~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0})) ==
        std::vector<uint32_t>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  // Counter 243f6a88 85a308d3 13198a2e 03707344, key a4093822 299f31d0 (digits of pi).
  CHECK(block_words(philox4x32(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull)) ==
        std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("philox_word walks the stream four words per block") {
  const uint64_t seed = 0x299f31d0a4093822ull;
  const PhiloxBlock block5 = philox4x32(seed, 5, 0);
  const PhiloxBlock block6 = philox4x32(seed, 6, 0);
  // Word 21 is word 1 of block 5; offset 22 + index 2 is word 0 of block 6.
  CHECK(philox_word(seed, 0, 21) == block5.values[1]);
  CHECK(philox_word(seed, 20, 3) == block5.values[3]);
  CHECK(philox_word(seed, 22, 2) == block6.values[0]);
}

TEST_CASE("uniform conversions stay below 1 at the extremes") {
  CHECK(uniform_from_word(0) == 0.0f);
  CHECK(uniform_from_word(0xffffffffu) < 1.0f);
  CHECK(uniform_from_word(0xffffffffu) == doctest::Approx(1.0 - 1.0 / 16777216.0));
  CHECK(uniform_double_from_words(0, 0) == 0.0);
  CHECK(uniform_double_from_words(0xffffffffu, 0xffffffffu) < 1.0);
  CHECK(uniform_double_from_words(0x80000000u, 0) == 0.5);
  CHECK(uniform_from_word_bits(0xffffffffu, 8) == 255.0f / 256.0f);  // bfloat16's grid
  CHECK(uniform_from_word_bits(0xffffffffu, 11) == 2047.0f / 2048.0f);  // float16's grid
  CHECK(uniform_from_word_bits(0x80000000u, 11) == 0.5f);
}

TEST_CASE("a generator replays its stream from a saved state") {
  Generator generator(42);
  CHECK(generator.seed() == 42);
  generator.next_word();
  const GeneratorState saved = generator.get_state();
  CHECK(saved == GeneratorState{42, 4});  // a host draw consumes a whole Philox block
  std::vector<uint32_t> first;
  for (int i = 0; i < 5; ++i) first.push_back(generator.next_word());
  const double uniform = generator.next_uniform();
  CHECK(uniform >= 0.0);
  CHECK(uniform < 1.0);
  generator.set_state(saved);
  std::vector<uint32_t> again;
  for (int i = 0; i < 5; ++i) again.push_back(generator.next_word());
  CHECK(again == first);
  CHECK(generator.next_uniform() == uniform);
  // Word 0 of the block at offset 4 under key 42.
  CHECK(first[0] == philox4x32(42, 1, 0).values[0]);

  const GeneratorState at = generator.reserve(6);
  CHECK(generator.get_state().offset == at.offset + 8);  // reservations round up to whole blocks
  generator.manual_seed(7);
  CHECK(generator.get_state() == GeneratorState{7, 0});
}

TEST_CASE("rand follows the default generator's stream: element i uses words 2i and 2i+1") {
  manual_seed(2024);
  const GeneratorState start = default_generator(kCPU).get_state();
  CHECK(start == GeneratorState{2024, 0});
  Tensor values = rand({5}, {.dtype = kFloat64, .device = kCPU});
  CHECK(default_generator(kCPU).get_state() == GeneratorState{2024, 12});  // 10 words, rounded up
  const std::vector<double> drawn = values.to_vector<double>();
  for (int i = 0; i < 5; ++i) {
    const double expected = uniform_double_from_words(philox_word(2024, 0, 2 * i), philox_word(2024, 0, 2 * i + 1));
    CHECK(drawn[i] == expected);
  }
  // float32 takes the top 24 bits of word 2i only.
  const auto narrow = rand({3}, {.device = kCPU}).to_vector<float>();
  for (int i = 0; i < 3; ++i) CHECK(narrow[i] == uniform_from_word(philox_word(2024, 12, 2 * i)));
}

TEST_CASE("rand, randn and randint read each element's words from the stream, across chunks") {
  // The kernels walk the stream a block at a time in chunks of kParallelGrain elements; every
  // element must still be the function of words 2i and 2i+1 that philox_word gives. Offset 6 starts
  // mid-block (a generator reserves whole blocks; a saved state may point anywhere).
  const uint64_t seed = 77;
  const uint64_t offset = 6;
  const int64_t count = 2 * kParallelGrain + 5;
  auto word = [&](int64_t i, int which) { return philox_word(seed, offset, 2 * static_cast<uint64_t>(i) + which); };
  default_generator(kCPU).set_state({seed, offset});
  const auto uniform = rand({count}, {.dtype = kFloat64, .device = kCPU}).to_vector<double>();
  default_generator(kCPU).set_state({seed, offset});
  const auto normal = randn({count}, {.device = kCPU}).to_vector<float>();
  default_generator(kCPU).set_state({seed, offset});
  const auto integers = randint(-3, 1000, {count}, {.dtype = kInt64, .device = kCPU}).to_vector<int64_t>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double u1 = 1.0 - static_cast<double>(word(i, 0)) / 4294967296.0;
    const double u2 = static_cast<double>(word(i, 1)) / 4294967296.0;
    const float expected_normal = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
    const uint64_t bits = (uint64_t{word(i, 0)} << 32) | word(i, 1);
    const int64_t expected_integer = -3 + static_cast<int64_t>(bits % 1003);
    if (uniform[i] != uniform_double_from_words(word(i, 0), word(i, 1)) || normal[i] != expected_normal ||
        integers[i] != expected_integer)
      ++wrong;
  }
  CHECK(wrong == 0);
}

// Ranges beyond int32 and near the ends of int64: the value is low + (words mod range) in
// unsigned arithmetic (high - low in int64 overflowed for [INT64_MIN, INT64_MAX), and the value
// went through double, which kept one value of [2^60, 2^60 + 10)).
TEST_CASE("randint draws exactly from any int64 range and refuses ranges its dtype cannot hold") {
  const uint64_t seed = 5;
  const uint64_t offset = 8;
  auto word = [&](int64_t i, int which) { return philox_word(seed, offset, 2 * static_cast<uint64_t>(i) + which); };
  const int64_t count = 1000;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const auto& [low, high] : {std::pair{kMin, kMax}, std::pair{int64_t{1} << 60, (int64_t{1} << 60) + 10},
                                  std::pair{int64_t{-7}, int64_t{5'000'000'000}}}) {
    CAPTURE(low);
    CAPTURE(high);
    default_generator(kCPU).set_state({seed, offset});
    const auto drawn = randint(low, high, {count}, {.dtype = kInt64, .device = kCPU}).to_vector<int64_t>();
    const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
    std::set<int64_t> distinct;
    int64_t wrong = 0;
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t bits = (uint64_t{word(i, 0)} << 32) | word(i, 1);
      const int64_t expected = static_cast<int64_t>(static_cast<uint64_t>(low) + bits % range);
      if (drawn[i] != expected || drawn[i] < low || drawn[i] >= high) ++wrong;
      distinct.insert(drawn[i]);
    }
    CHECK(wrong == 0);
    CHECK(distinct.size() >= std::min<uint64_t>(range, 990));  // all 10 of the small range
  }
  // Inclusive ends that the dtype holds exactly are fine; one past them is refused.
  CHECK(randint(-(1 << 24), (1 << 24) + 1, {8}, {.dtype = kFloat32, .device = kCPU}).numel() == 8);
  CHECK(randint(0, 2, {8}, {.dtype = kBool, .device = kCPU}).numel() == 8);
  const GeneratorState before = default_generator(kCPU).get_state();
  CHECK_THROWS_WITH_AS(randint(0, 5'000'000'000, {4}, {.dtype = kInt32, .device = kCPU}),
                       doctest::Contains("randint: [low, high) = [0, 5000000000) does not fit int32"), Error);
  CHECK(default_generator(kCPU).get_state() == before);  // refused before any draw was reserved
  CHECK_THROWS_WITH_AS(randint(0, (1 << 24) + 2, {4}, {.dtype = kFloat32, .device = kCPU}),
                       doctest::Contains("does not fit float32, which holds the integers of [-16777216, 16777216]"),
                       Error);
  CHECK_THROWS_WITH_AS(randint(-1, 1, {4}, {.dtype = kBool, .device = kCPU}), doctest::Contains("does not fit bool"),
                       Error);
  CHECK_THROWS_WITH_AS(randint(0, 300, {4}, {.dtype = kBFloat16, .device = kCPU}),
                       doctest::Contains("does not fit bfloat16"), Error);
}

TEST_CASE("default generator get_state/set_state replays rand, randn and randint") {
  manual_seed(11);
  rand({3}, {.device = kCPU});  // move away from offset 0
  Generator& generator = default_generator(kCPU);
  const GeneratorState saved = generator.get_state();
  const auto uniform = rand({64}, {.device = kCPU}).to_vector<float>();
  const auto normal = randn({64}, {.device = kCPU}).to_vector<float>();
  const auto integers = randint(-5, 5, {64}, {.dtype = kInt64, .device = kCPU}).to_vector<int64_t>();
  const GeneratorState after = generator.get_state();
  generator.set_state(saved);
  CHECK(rand({64}, {.device = kCPU}).to_vector<float>() == uniform);
  CHECK(randn({64}, {.device = kCPU}).to_vector<float>() == normal);
  CHECK(randint(-5, 5, {64}, {.dtype = kInt64, .device = kCPU}).to_vector<int64_t>() == integers);
  CHECK(generator.get_state() == after);
  // Consecutive draws continue the stream instead of repeating it.
  CHECK(rand({64}, {.device = kCPU}).to_vector<float>() != uniform);
}

TEST_CASE("each device has its own generator and manual_seed seeds them all") {
  const Device cuda0(DeviceType::CUDA, 0);
  Generator& cpu = default_generator(kCPU);
  Generator& gpu = default_generator(cuda0);
  CHECK(&cpu != &gpu);
  CHECK(&default_generator(kCPU) == &cpu);
  manual_seed(99);
  cpu.reserve(40);
  CHECK(cpu.get_state() == GeneratorState{99, 40});
  CHECK(gpu.get_state() == GeneratorState{99, 0});  // drawing on one device leaves the other alone
  manual_seed(123);
  CHECK(cpu.get_state() == GeneratorState{123, 0});
  CHECK(gpu.get_state() == GeneratorState{123, 0});
  // A generator created after manual_seed starts from that seed too.
  CHECK(default_generator(Device(DeviceType::CUDA, 5)).get_state() == GeneratorState{123, 0});
}

TEST_CASE("same seed gives the same random tensors with one thread or two") {
  ThreadCountGuard guard;
  // Large enough that the kernels' OpenMP loops really split the work (kParallelGrain).
  const int64_t count = 4 * kParallelGrain + 17;
  auto draw_all = [&](int threads) {
    set_num_threads(threads);
    manual_seed(31337);
    auto uniform = rand({count}, {.device = kCPU}).to_vector<float>();
    auto normal = randn({count}, {.dtype = kFloat64, .device = kCPU}).to_vector<double>();
    auto integers = randint(0, 1000, {count}, {.dtype = kInt64, .device = kCPU}).to_vector<int64_t>();
    return std::tuple{uniform, normal, integers};
  };
  const auto [uniform1, normal1, integers1] = draw_all(1);
  const auto [uniform2, normal2, integers2] = draw_all(2);
  CHECK(uniform1 == uniform2);
  CHECK(normal1 == normal2);
  CHECK(integers1 == integers2);

  // And the draws look like their distributions (loose bounds: about 10 standard errors).
  double uniform_sum = 0, normal_sum = 0, normal_squares = 0, integer_sum = 0;
  for (float value : uniform1) {
    REQUIRE(value >= 0.0f);
    REQUIRE(value < 1.0f);
    uniform_sum += value;
  }
  for (double value : normal1) {
    normal_sum += value;
    normal_squares += value * value;
  }
  for (int64_t value : integers1) {
    REQUIRE(value >= 0);
    REQUIRE(value < 1000);
    integer_sum += static_cast<double>(value);
  }
  const double n = static_cast<double>(count);
  CHECK(std::abs(uniform_sum / n - 0.5) < 10 * std::sqrt(1.0 / 12.0 / n));
  CHECK(std::abs(normal_sum / n) < 10 / std::sqrt(n));
  CHECK(std::abs(normal_squares / n - 1.0) < 10 * std::sqrt(2.0 / n));
  CHECK(std::abs(integer_sum / n - 499.5) < 10 * 288.7 / std::sqrt(n));
}

TEST_CASE("rand never returns 1, whatever the dtype's precision") {
  Generator& generator = default_generator(kCPU);
  // At (seed 3, offset 9403160) the first word is 0xffffff97: its 53-bit double is
  // 0.99999997574608424, which rounds to 1.0f when narrowed to float (found by searching the stream).
  generator.set_state({3, 9403160});
  CHECK(rand({1}, {.device = kCPU}).item() < 1.0);
  generator.set_state({3, 9403160});
  CHECK(rand({1}, {.dtype = kFloat64, .device = kCPU}).item() == doctest::Approx(0.99999997574608424));
  // 16-bit floats keep 8 or 11 significand bits: a 65536-element draw holds many words whose top
  // bits are all ones, the values that rounding would turn into 1.
  manual_seed(17);
  for (DType dtype : {kBFloat16, kFloat16}) {
    const auto values = rand({65536}, {.dtype = dtype, .device = kCPU}).to(kFloat32).to_vector<float>();
    float largest = 0;
    double sum = 0;
    for (float value : values) {
      largest = std::max(largest, value);
      sum += value;
    }
    CHECK_MESSAGE(largest < 1.0f, dtype_name(dtype));
    CHECK_MESSAGE(std::abs(sum / 65536 - 0.5) < 0.02, dtype_name(dtype));  // no visible bias from truncation
  }
}

}  // namespace test_random
