// exp over arrays (kernels/cpu/vector_exp.h) against the long double exp: within four ulps of the
// true value over the finite range (libmvec's vector functions give 2.5-2.7 here), the IEEE
// special values, and the same bits for a value wherever it sits in an array (a vector's lanes,
// the padded tail, next to a lane libmvec hands to the scalar function), which is what lets
// cross_entropy block its rows freely.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/vector_exp.h"

namespace test_vector_exp {

using ember::cpu::exp_in_place;

namespace {

// |got - expected| in units of the last place of T at `expected`.
template <typename T>
double ulps(T got, long double expected) {
  const T rounded = static_cast<T>(expected);
  const T next = std::nextafter(rounded, std::numeric_limits<T>::infinity());
  const long double ulp = static_cast<long double>(next) - static_cast<long double>(rounded);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - expected) / ulp);
}

template <typename T>
void check_accuracy(T low, T high, double allowed_ulps) {
  std::mt19937_64 generator(7);
  std::uniform_real_distribution<double> uniform(static_cast<double>(low), static_cast<double>(high));
  std::vector<T> inputs(100003);  // not a multiple of any vector width: the tail is used too
  for (T& value : inputs) value = static_cast<T>(uniform(generator));
  std::vector<T> values = inputs;
  exp_in_place(values.data(), static_cast<int64_t>(values.size()));
  double worst = 0.0;
  T worst_input = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const double error = ulps(values[i], std::exp(static_cast<long double>(inputs[i])));
    if (error > worst) {
      worst = error;
      worst_input = inputs[i];
    }
  }
  INFO("worst error " << worst << " ulps at exp(" << worst_input << ")");
  CHECK(worst <= allowed_ulps);
}

}  // namespace

TEST_CASE("exp over arrays is within four ulps of the true exp over the finite range") {
  INFO("through libmvec: " << ember::cpu::vector_exp_from_libmvec());
  check_accuracy<float>(-87.0f, 88.0f, 4.0);
  check_accuracy<float>(-1.0f, 1.0f, 4.0);
  check_accuracy<double>(-700.0, 700.0, 4.0);
  check_accuracy<double>(-1.0, 1.0, 4.0);
}

TEST_CASE("exp over arrays keeps the IEEE special values") {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> values{0.0f, -0.0f, -kInf, kInf, std::nanf(""), 100.0f, -200.0f, 1.0f, -103.0f};
  exp_in_place(values.data(), static_cast<int64_t>(values.size()));
  CHECK(values[0] == 1.0f);
  CHECK(values[1] == 1.0f);
  CHECK(values[2] == 0.0f);
  CHECK(values[3] == kInf);
  CHECK(std::isnan(values[4]));
  CHECK(values[5] == kInf);  // overflow
  CHECK(values[6] == 0.0f);  // underflow
  CHECK(ulps(values[7], std::exp(1.0L)) <= 4.0);
  CHECK(values[8] >= 0.0f);  // a subnormal result
  CHECK(values[8] < std::numeric_limits<float>::min());
  std::vector<double> doubles{0.0, -std::numeric_limits<double>::infinity(), std::nan(""), 800.0, -800.0};
  exp_in_place(doubles.data(), static_cast<int64_t>(doubles.size()));
  CHECK(doubles[0] == 1.0);
  CHECK(doubles[1] == 0.0);
  CHECK(std::isnan(doubles[2]));
  CHECK(doubles[3] == std::numeric_limits<double>::infinity());
  CHECK(doubles[4] == 0.0);
}

TEST_CASE("a value's exp has the same bits at every position of an array and in the tail") {
  std::mt19937 generator(11);
  std::uniform_real_distribution<float> uniform(-30.0f, 30.0f);
  for (int trial = 0; trial < 50; ++trial) {
    const float value = uniform(generator);
    float alone = value;
    exp_in_place(&alone, 1);  // all tail
    for (int64_t length : {1, 3, 4, 7, 8, 15, 16, 17, 33}) {
      std::vector<float> values(length);
      for (int64_t i = 0; i < length; ++i) values[i] = uniform(generator);
      const int64_t position = trial % length;
      values[position] = value;
      // libmvec sends special lanes (overflow here) through the scalar function: the rest keep theirs.
      if (length > 1) values[(position + 1) % length] = 100.0f;
      exp_in_place(values.data(), length);
      INFO("exp(" << value << ") at " << position << " of " << length);
      CHECK(values[position] == alone);
    }
  }
}

}  // namespace test_vector_exp
