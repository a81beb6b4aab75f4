// The shuffle networks of kernels/cpu/simd_vector.h at every vector width a build may have (16,
// 32 and 64 bytes; GCC lowers the wider ones to narrower registers): simd::horizontal_sums, the
// fold small_gemm_dot uses for a whole tile of sums at once, must give lane i tree_sum of vector i
// bit for bit, so the dot form's results stay what its documented order gives; simd::transpose,
// which small_gemm uses to copy column-major operands, must move every element exactly.
// The widths past the build's registers are exercised on purpose; GCC warns that passing such
// vectors by value has another ABI with other -m flags, which matters only across a library
// boundary, and everything here is inline in this one file.
#pragma GCC diagnostic ignored "-Wpsabi"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/simd_vector.h"

namespace test_simd_vector {

using namespace ember::cpu;

namespace {

// Values of mixed magnitude, so that adding the same lanes in another grouping rounds otherwise.
template <typename T>
T mixed_value(std::mt19937& rng) {
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-12, 12);
  return static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
}

// Counts the lanes of horizontal_sums that differ in any bit from tree_sum over the same vector,
// and the vectors whose left-to-right sum differs from tree_sum (so the order is observable).
template <typename T, int Bytes>
void check_width(int trials) {
  using Vector = typename simd::VectorOf<T, Bytes>::type;
  constexpr int lanes = Bytes / static_cast<int>(sizeof(T));
  std::mt19937 rng(Bytes * 31 + sizeof(T));
  int differing = 0;
  int order_visible = 0;
  for (int trial = 0; trial < trials; ++trial) {
    Vector vectors[lanes];
    T expected[lanes];
    for (int i = 0; i < lanes; ++i) {
      T values[lanes];
      for (T& value : values) value = mixed_value<T>(rng);
      std::memcpy(&vectors[i], values, sizeof values);
      expected[i] = simd::tree_sum<T, Bytes>(values);
      T in_order = 0;
      for (T value : values) in_order += value;
      order_visible += std::memcmp(&in_order, &expected[i], sizeof(T)) != 0 ? 1 : 0;
    }
    const Vector folded = simd::horizontal_sums<T, Bytes>(vectors);
    T actual[lanes];
    std::memcpy(actual, &folded, sizeof actual);
    for (int i = 0; i < lanes; ++i) differing += std::memcmp(&actual[i], &expected[i], sizeof(T)) != 0 ? 1 : 0;
  }
  CHECK(differing == 0);
  if (lanes > 2) CHECK(order_visible > 0);  // two lanes have one grouping only
}

// Transposes lanes x lanes blocks of distinct values and checks every element's new place.
template <typename T, int Bytes>
void check_transpose() {
  using Vector = typename simd::VectorOf<T, Bytes>::type;
  constexpr int lanes = Bytes / static_cast<int>(sizeof(T));
  T matrix[lanes][lanes];
  Vector rows[lanes];
  for (int r = 0; r < lanes; ++r) {
    for (int c = 0; c < lanes; ++c) matrix[r][c] = static_cast<T>(r * 100 + c);
    std::memcpy(&rows[r], matrix[r], sizeof matrix[r]);
  }
  simd::transpose<T, Bytes>(rows);
  int misplaced = 0;
  for (int r = 0; r < lanes; ++r) {
    T values[lanes];
    std::memcpy(values, &rows[r], sizeof values);
    for (int c = 0; c < lanes; ++c) misplaced += values[c] == matrix[c][r] ? 0 : 1;
  }
  CHECK(misplaced == 0);
}

}  // namespace

TEST_CASE("simd::transpose moves every element of a lanes x lanes block at every vector width") {
  check_transpose<float, 16>();
  check_transpose<float, 32>();
  check_transpose<float, 64>();
  check_transpose<double, 16>();
  check_transpose<double, 32>();
  check_transpose<double, 64>();
}

TEST_CASE("simd::horizontal_sums gives each vector's tree_sum bit for bit at every vector width") {
  SUBCASE("float") {
    check_width<float, 16>(2000);
    check_width<float, 32>(2000);
    check_width<float, 64>(2000);
  }
  SUBCASE("double") {
    check_width<double, 16>(2000);
    check_width<double, 32>(2000);
    check_width<double, 64>(2000);
  }
}

}  // namespace test_simd_vector
