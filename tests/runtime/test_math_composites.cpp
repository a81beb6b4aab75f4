// fmax, fmin, float_power, true_divide, floor_divide, deg2rad, rad2deg, signbit, fix, positive, addr,
// inner and dist (runtime/functional_math_composites.h) against float64 references written here as
// plain loops over torch's definitions: NaN, infinities and -0.0, broadcasting, integer inputs,
// gradients by central differences, and the error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/functional_math_composites.h"

namespace test_math_composites {

using namespace ember;
using namespace ember::testing;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Equal as values, NaN matching NaN and the sign of a zero compared too.
void check_same(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(actual[i]));
    } else {
      CHECK(actual[i] == expected[i]);
      CHECK(std::signbit(actual[i]) == std::signbit(expected[i]));
    }
  }
}

// fmax by its definition: a NaN loses to a number.
double fmax_reference(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return a >= b ? a : b;
}
double fmin_reference(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return a <= b ? a : b;
}

// Python's floor division on doubles: the largest integer q with q <= a / b in exact arithmetic,
// found from the exact remainder a - q b (std::fmod is exact).
double floor_divide_reference(double a, double b) {
  if (b == 0.0) return a / b;
  const double mod = std::fmod(a, b);
  double quotient = (a - mod) / b;
  if (mod != 0.0 && ((b < 0.0) != (mod < 0.0))) quotient -= 1.0;
  if (quotient == 0.0) return std::copysign(0.0, a / b);
  return std::round(quotient);
}

TEST_CASE("fmax and fmin let a number win over NaN, broadcast, and match the references") {
  const std::vector<double> a_values{1.0, kNaN, kNaN, -0.0, kInf, -3.0};
  const std::vector<double> b_values{2.0, 5.0, kNaN, 0.0, 1.0, -kInf};
  const Tensor a = doubles(a_values), b = doubles(b_values);
  std::vector<double> max_expected, min_expected;
  for (size_t i = 0; i < a_values.size(); ++i) {
    max_expected.push_back(fmax_reference(a_values[i], b_values[i]));
    min_expected.push_back(fmin_reference(a_values[i], b_values[i]));
  }
  check_same(values_of(fmax(a, b)), max_expected);
  check_same(values_of(fmin(a, b)), min_expected);
  // [2, 1] with [3]: broadcasting to [2, 3].
  const Tensor column = doubles({0.5, kNaN}, {2, 1}), row = doubles({kNaN, 0.0, 1.0});
  check_same(values_of(fmax(column, row)), {0.5, 0.5, 1.0, kNaN, 0.0, 1.0});
  check_same(values_of(fmin(column, row)), {0.5, 0.0, 0.5, kNaN, 0.0, 1.0});
}

TEST_CASE("fmax promotes dtypes like torch and takes integers") {
  const Tensor ints = from_vector<int32_t>({3, -7, 4}, {3}, dtype_options(kInt32));
  const Tensor floats = from_vector<float>({1.5f, std::nanf(""), 4.0f}, {3}, dtype_options(kFloat32));
  const Tensor result = fmax(ints, floats);
  CHECK(result.dtype() == kFloat32);
  check_same(values_of(result), {3.0, -7.0, 4.0});
  const Tensor int_result = fmin(ints, from_vector<int64_t>({2, 0, 9}, {3}, dtype_options(kInt64)));
  CHECK(int_result.dtype() == kInt64);
  check_same(values_of(int_result), {2.0, -7.0, 4.0});
}

TEST_CASE("fmax and fmin send the gradient to the chosen input, to a on ties") {
  gradcheck_leaves([](const std::vector<Tensor>& x) { return fmax(x[0], x[1]); }, {leaf({2, 3}, 1), leaf({3}, 2)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return fmin(x[0], x[1]); }, {leaf({2, 3}, 3), leaf({3}, 4)});
  const Tensor a = leaf_of({1.0, kNaN, 2.0}), b = leaf_of({1.0, 4.0, kNaN});
  fmax(a, b).sum().backward();
  check_same(values_of(a.grad()), {1.0, 0.0, 1.0});
  check_same(values_of(b.grad()), {0.0, 1.0, 0.0});
}

TEST_CASE("float_power computes in float64 whatever the inputs") {
  const Tensor base = from_vector<float>({2.0f, -1.5f, 0.0f, 3.0f}, {4}, dtype_options(kFloat32));
  const Tensor exponent = from_vector<int32_t>({3, 2, 0, -1}, {4}, dtype_options(kInt32));
  const Tensor result = float_power(base, exponent);
  CHECK(result.dtype() == kFloat64);
  check_same(values_of(result), {8.0, 2.25, 1.0, 1.0 / 3.0});
  const Tensor ints = from_vector<int64_t>({2, 3}, {2}, dtype_options(kInt64));
  CHECK(float_power(ints, 0.5).dtype() == kFloat64);
  check_same(values_of(float_power(ints, 0.5)), {std::sqrt(2.0), std::sqrt(3.0)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return float_power(abs(x[0]), x[1]); },
                   {leaf({2, 2}, 5), leaf({2, 2}, 6)});
}

TEST_CASE("true_divide is div and fix is trunc, positive returns its input") {
  const Tensor ints = from_vector<int32_t>({7, -7}, {2}, dtype_options(kInt32));
  const Tensor two = from_vector<int32_t>({2, 2}, {2}, dtype_options(kInt32));
  CHECK(true_divide(ints, two).dtype() == kFloat32);
  check_same(values_of(true_divide(ints, two)), {3.5, -3.5});
  check_same(values_of(true_divide(doubles({1.0, -0.0}), 0.0)), {kInf, kNaN});
  check_same(values_of(fix(doubles({2.7, -2.7, -0.2, kNaN, -kInf}))), {2.0, -2.0, -0.0, kNaN, -kInf});
  const Tensor x = doubles({1.0, -2.0});
  CHECK(positive(x).data_ptr<double>() == x.data_ptr<double>());
  const int line = __LINE__ + 1;
  check_refusal(error_of([] { positive(from_vector<bool>({true}, {1}, dtype_options(kBool))); }), "positive", line);
}

TEST_CASE("floor_divide rounds toward -inf as Python's //, floats by torch's exact remainder rule") {
  const std::vector<double> a_values{7.0, -7.0, 7.0, -7.0, 1.0, 0.5, -0.5, 3.0, -3.0, 0.0, kInf, 5.0, kNaN};
  const std::vector<double> b_values{2.0, 2.0, -2.0, -2.0, 0.1, 2.0, 2.0, 0.0, 0.0, -1.0, 2.0, kInf, 1.0};
  std::vector<double> expected;
  for (size_t i = 0; i < a_values.size(); ++i) expected.push_back(floor_divide_reference(a_values[i], b_values[i]));
  CHECK(expected[4] == 9.0);  // 1 // 0.1 is 9 (0.1 is slightly above 1/10), floor(1 / 0.1) would be 10
  check_same(values_of(floor_divide(doubles(a_values), doubles(b_values))), expected);
  const Tensor a = from_vector<int64_t>({7, -7, 7, -7, 0, -1}, {6}, dtype_options(kInt64));
  const Tensor b = from_vector<int32_t>({2, 2, -2, -2, 5, 3}, {6}, dtype_options(kInt32));
  const Tensor result = floor_divide(a, b);
  CHECK(result.dtype() == kInt64);
  check_same(values_of(result), {3.0, -4.0, -4.0, 3.0, 0.0, -1.0});
  const Tensor int32s = from_vector<int32_t>({7, -7}, {2}, dtype_options(kInt32));
  CHECK(floor_divide(int32s, 2.0).dtype() == kInt32);
  check_same(values_of(floor_divide(int32s, 2.0)), {3.0, -4.0});
  CHECK(floor_divide(int32s, 2.5).dtype() == kFloat32);
  check_same(values_of(floor_divide(int32s, 2.5)), {2.0, -3.0});
  check_same(values_of(floor_divide(doubles({1.0, -1.0}), 0.1)), {floor_divide_reference(1.0, 0.1), -10.0});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { floor_divide(a, zeros({6}, dtype_options(kInt64))); });
  CHECK(names_line(message, line));
  CHECK(message.find("floor_divide: ZeroDivisionError") != std::string::npos);
  const int bool_line = __LINE__ + 1;
  check_refusal(error_of([] { floor_divide(from_vector<bool>({true}, {1}, dtype_options(kBool)), doubles({1.0})); }),
                "floor_divide: bool", bool_line);
  // Past 2^53 the float64 quotient could round: refused, not wrong. 2^53 itself divides exactly.
  const int64_t two_53 = int64_t{1} << 53;
  CHECK(floor_divide(from_vector<int64_t>({two_53}, {1}, dtype_options(kInt64)), 2.0).item_int64() == two_53 / 2);
  const int big_line = __LINE__ + 1;
  check_refusal(error_of([&] { floor_divide(from_vector<int64_t>({two_53 + 1}, {1}, dtype_options(kInt64)), 3.0); }),
                "floor_divide: an integer dividend beyond +-2^53", big_line);
}

TEST_CASE("deg2rad, rad2deg and signbit") {
  const std::vector<double> values{180.0, -90.0, 0.0, -0.0, kInf, kNaN, 1e-300};
  std::vector<double> radians, degrees;
  for (double v : values) {
    radians.push_back(v * (std::numbers::pi / 180.0));
    degrees.push_back(v * (180.0 / std::numbers::pi));
  }
  check_same(values_of(deg2rad(doubles(values))), radians);
  check_same(values_of(rad2deg(doubles(values))), degrees);
  const Tensor ints = from_vector<int32_t>({90, -180}, {2}, dtype_options(kInt32));
  CHECK(deg2rad(ints).dtype() == kFloat32);
  CHECK(values_of(deg2rad(ints))[0] == doctest::Approx(std::numbers::pi / 2).epsilon(1e-6));
  gradcheck_leaves([](const std::vector<Tensor>& x) { return rad2deg(deg2rad(x[0]) * x[0]); }, {leaf({3}, 7)});

  const Tensor signs = signbit(doubles({-1.0, 1.0, -0.0, 0.0, -kInf, kInf, kNaN, -1e-310}));
  CHECK(signs.dtype() == kBool);
  check_same(values_of(signs), {1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0});
  check_same(values_of(signbit(from_vector<int32_t>({-3, 0, 4}, {3}, dtype_options(kInt32)))), {1.0, 0.0, 0.0});
  check_same(values_of(signbit(from_vector<bool>({true, false}, {2}, dtype_options(kBool)))), {0.0, 0.0});
}

TEST_CASE("addr is beta input + alpha outer(vec1, vec2), input not read with beta 0") {
  const Tensor input = small_tensor({3, 2}, 11), v1 = small_tensor({3}, 12), v2 = small_tensor({2}, 13);
  const std::vector<double> in = values_of(input), x = values_of(v1), y = values_of(v2);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) expected.push_back(0.5 * in[i * 2 + j] + (-2.0) * x[i] * y[j]);
  const std::vector<double> actual = values_of(addr(input, v1, v2, 0.5, -2.0));
  for (size_t i = 0; i < expected.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-14));
  check_same(values_of(addr(doubles({kNaN, kNaN}), doubles({1.0}), doubles({2.0, 3.0}), 0.0)), {2.0, 3.0});
  gradcheck_leaves([](const std::vector<Tensor>& t) { return addr(t[0], t[1], t[2], 1.5, 0.5); },
                   {leaf({2}, 14), leaf({3}, 15), leaf({2}, 16)});
  const int line = __LINE__ + 1;
  check_refusal(error_of([&] { addr(input, small_tensor({3, 1}, 1), v2); }), "addr: expected 1-D", line);
  const Tensor ints = from_vector<int64_t>({1, 2}, {2}, dtype_options(kInt64));
  const int int_line = __LINE__ + 1;
  check_refusal(error_of([&] { addr(ints, ints, ints, 0.5); }), "beta and alpha must be integral", int_line);
}

TEST_CASE("inner contracts the last dims, and multiplies by a 0-d operand") {
  const Tensor a = small_tensor({2, 3, 4}, 21), b = small_tensor({5, 4}, 22);
  const std::vector<double> av = values_of(a), bv = values_of(b), result = values_of(inner(a, b));
  CHECK(inner(a, b).sizes() == Dims{2, 3, 5});
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 5; ++j) {
      double total = 0.0;
      for (int k = 0; k < 4; ++k) total += av[i * 4 + k] * bv[j * 4 + k];
      CHECK(result[i * 5 + j] == doctest::Approx(total).epsilon(1e-13));
    }
  check_same(values_of(inner(doubles({2.0}, {}), doubles({1.0, -3.0}))), {2.0, -6.0});
  gradcheck_leaves([](const std::vector<Tensor>& t) { return inner(t[0], t[1]); },
                   {leaf({2, 3}, 23), leaf({4, 3}, 24)});
  const int line = __LINE__ + 1;
  check_refusal(error_of([&] { inner(a, small_tensor({3}, 1)); }), "inner: the last dimension must match", line);
}

TEST_CASE("dist is the p-norm of a - b, including p = 0, inf and -inf") {
  const Tensor a = small_tensor({2, 3}, 31), b = small_tensor({3}, 32);
  const std::vector<double> av = values_of(a), bv = values_of(b);
  std::vector<double> diffs;
  for (int i = 0; i < 6; ++i) diffs.push_back(std::abs(av[i] - bv[i % 3]));
  for (double p : {2.0, 1.0, 3.5, 0.0, kInf, -kInf}) {
    INFO("p " << p);
    double expected = 0.0;
    if (p == 0.0) {
      for (double d : diffs) expected += d != 0.0 ? 1.0 : 0.0;
    } else if (std::isinf(p)) {
      expected = diffs[0];
      for (double d : diffs) expected = p > 0 ? std::max(expected, d) : std::min(expected, d);
    } else {
      for (double d : diffs) expected += std::pow(d, p);
      expected = std::pow(expected, 1.0 / p);
    }
    CHECK(dist(a, b, p).item() == doctest::Approx(expected).epsilon(1e-13));
  }
  for (double p : {2.0, 1.0, 3.0, kInf}) {
    gradcheck_leaves([p](const std::vector<Tensor>& t) { return dist(t[0], t[1], p); },
                     {leaf({2, 3}, 33), leaf({3}, 34)});
  }
  const Tensor int_a = zeros({2}, dtype_options(kInt32)), b_values = doubles({1.0, 2.0});
  const int line = __LINE__ + 1;
  check_refusal(error_of([&] { dist(int_a, b_values); }), "dist: expected floating", line);
}

}  // namespace test_math_composites
