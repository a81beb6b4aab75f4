// xlogy, sinc, heaviside, frac, logit and isin (runtime/functional_math_extra.h): float64
// references written here from torch's definitions, the special values torch gives (xlogy(0, NaN)
// is NaN, sinc(0) is 1), dtypes, gradients by central differences and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_ops_composites_pointwise {

using namespace ember;
using ember::testing::check_refusal;
using ember::testing::doubles;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Equal, with NaN equal to NaN, up to a relative tolerance.
void check_close(const std::vector<double>& got, const std::vector<double>& expected, double tolerance = 1e-15) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO((std::string("element ") + std::to_string(i) + ": got " + std::to_string(got[i]) + ", expected " +
          std::to_string(expected[i])));
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(std::abs(got[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
    }
  }
}

}  // namespace

TEST_CASE("xlogy: x log y, 0 at x == 0 unless y is NaN, broadcasting and dtypes") {
  const std::vector<double> xs{0.0, 0.0, 0.0, 0.0, 2.0, -1.5, kNaN, 3.0, 0.0};
  const std::vector<double> ys{kNaN, 0.0, kInf, -1.0, 0.5, 3.0, 2.0, 0.0, 4.0};
  std::vector<double> expected;
  for (size_t i = 0; i < xs.size(); ++i)
    expected.push_back(std::isnan(ys[i]) ? kNaN : xs[i] == 0.0 ? 0.0 : xs[i] * std::log(ys[i]));
  check_close(values_of(xlogy(doubles(xs), doubles(ys))), expected);
  // [2, 1] with [3]: broadcast to [2, 3].
  const Tensor x = small_tensor({2, 1}, 1), y = small_tensor({3}, 2).abs();
  std::vector<double> broadcast;
  for (double u : values_of(x))
    for (double v : values_of(y)) broadcast.push_back(u * std::log(v));
  check_close(values_of(xlogy(x, y)), broadcast);
  CHECK(xlogy(from_vector<int64_t>({1, 2}, {2}), from_vector<int32_t>({3, 4}, {2})).dtype() == kFloat32);
  CHECK(xlogy(from_vector<int64_t>({1, 2}, {2}), 2.0).dtype() == kFloat32);
  CHECK(xlogy(0.0, doubles({kNaN, 1.0})).dtype() == kFloat64);
  check_close(values_of(xlogy(0.0, doubles({kNaN, 0.0}))), {kNaN, 0.0});
  check_close(values_of(xlogy(doubles({2.0, 0.0}), kNaN)), {kNaN, kNaN});
  const Tensor half = xlogy(small_tensor({4}, 3, kFloat16), small_tensor({4}, 4, kFloat16).abs());
  CHECK(half.dtype() == kFloat16);
  // Gradients: log(y) to x, x / y to y; 0 to x at x == 0.
  gradcheck_leaves([](const std::vector<Tensor>& in) { return xlogy(in[0], in[1].abs()); },
                   {leaf({2, 3}, 5), leaf({3}, 6)});
  const Tensor zero_x = doubles({0.0, 1.5}).requires_grad_(), positive_y = doubles({2.0, 3.0}).requires_grad_();
  xlogy(zero_x, positive_y).sum().backward();
  check_close(values_of(zero_x.grad()), {0.0, std::log(3.0)});
  check_close(values_of(positive_y.grad()), {0.0, 0.5});
}

TEST_CASE("sinc: sin(pi x) / (pi x), 1 at 0 with gradient 0 there") {
  const std::vector<double> xs{0.0, 0.5, -1.0, 1e-20, 2.25, -3.7, kInf, kNaN};
  std::vector<double> expected;
  for (double x : xs) expected.push_back(x == 0.0 ? 1.0 : std::sin(std::numbers::pi * x) / (std::numbers::pi * x));
  check_close(values_of(sinc(doubles(xs))), expected);
  CHECK(sinc(from_vector<int32_t>({0, 1}, {2})).dtype() == kFloat32);
  gradcheck_leaves([](const std::vector<Tensor>& in) { return sinc(in[0]); }, {leaf({6}, 7)});
  const Tensor at_zero = doubles({0.0}).requires_grad_();
  sinc(at_zero).sum().backward();
  CHECK(values_of(at_zero.grad())[0] == 0.0);  // torch's masked_fill of the gradient at 0
}

TEST_CASE("heaviside, frac, isin: torch's definitions") {
  const Tensor x = doubles({-2.0, 0.0, 3.0, -0.0, kNaN, kInf});
  check_close(values_of(heaviside(x, doubles({0.5}))), {0.0, 0.5, 1.0, 0.5, 0.0, 1.0});
  check_close(values_of(heaviside(x, doubles({1, 2, 3, 4, 5, 6}))), {0.0, 2.0, 1.0, 4.0, 0.0, 1.0});
  // The gradient reaches values only where x == 0 (broadcast back to values' shape).
  const Tensor values = doubles({0.25, 0.75}, {2, 1}).requires_grad_();
  heaviside(doubles({0.0, -1.0, 0.0}), values).sum().backward();
  check_close(values_of(values.grad()), {2.0, 2.0});
  const Tensor ints = from_vector<int64_t>({-3, 0, 4}, {3});
  CHECK(heaviside(ints, from_vector<int64_t>({7}, {1})).to_vector<int64_t>() == std::vector<int64_t>{0, 7, 1});

  const std::vector<double> fs{2.75, -2.75, -0.0, 5.0, kInf, kNaN, -1e-30};
  std::vector<double> frac_expected;
  for (double f : fs) frac_expected.push_back(f - std::trunc(f));
  check_close(values_of(frac(doubles(fs))), frac_expected);
  CHECK(std::signbit(values_of(frac(doubles({-2.75})))[0]));
  gradcheck_leaves([](const std::vector<Tensor>& in) { return frac(in[0].mul(3.0)); }, {leaf({5}, 8)});

  const Tensor elements = doubles({1.0, 2.0, kNaN, 4.0, 5.0, 2.0}, {2, 3});
  const Tensor tests = doubles({2.0, kNaN, 5.0, 9.0}, {2, 2});
  const std::vector<bool> found{false, true, false, false, true, true};
  const Tensor result = isin(elements, tests);
  CHECK(result.dtype() == kBool);
  CHECK(result.sizes() == Dims{2, 3});
  CHECK(result.to_vector<bool>() == found);
  std::vector<bool> not_found;
  for (bool f : found) not_found.push_back(!f);
  CHECK(isin(elements, tests, false, true).to_vector<bool>() == not_found);
  CHECK(isin(from_vector<int64_t>({1, 2, 3}, {3}), 2.0).to_vector<bool>() == std::vector<bool>{false, true, false});
  CHECK(isin(from_vector<int64_t>({1, 2}, {2}), 2.5).to_vector<bool>() == std::vector<bool>{false, false});
  CHECK(isin(from_vector<int32_t>({1, 2}, {2}), doubles({2.0})).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(isin(zeros({0}), doubles({1.0})).sizes() == Dims{0});
  CHECK(isin(doubles({1.0}), zeros({0})).to_vector<bool>() == std::vector<bool>{false});
}

TEST_CASE("logit: with and without eps, values and gradients as torch's") {
  const std::vector<double> xs{0.25, 0.5, 0.9, 0.0, 1.0, -0.5, 1.5, 1e-9};
  std::vector<double> plain, clamped;
  for (double x : xs) {
    plain.push_back(std::log(x / (1.0 - x)));
    const double z = std::clamp(x, 1e-6, 1.0 - 1e-6);
    clamped.push_back(std::log(z / (1.0 - z)));
  }
  check_close(values_of(logit(doubles(xs))), plain);
  check_close(values_of(logit(doubles(xs), 1e-6)), clamped);
  check_close(values_of(logit(doubles(xs), -1.0)), plain);  // a negative eps does not clamp
  CHECK(logit(from_vector<int64_t>({0, 1}, {2})).dtype() == kFloat32);
  gradcheck_leaves([](const std::vector<Tensor>& in) { return logit(in[0].abs().mul(0.8).add(0.1)); }, {leaf({5}, 9)});
  // Outside [eps, 1 - eps] the gradient is 0; inside 1 / (x (1 - x)).
  const Tensor x = doubles({0.05, 0.5, 0.97}).requires_grad_();
  logit(x, 0.1).sum().backward();
  check_close(values_of(x.grad()), {0.0, 4.0, 0.0});
}

TEST_CASE("pointwise composites: errors name the function, the values and the caller's line") {
  int line = __LINE__ + 1;
  std::string message = error_of([&] { heaviside(doubles({1.0}), from_vector<float>({1.0f}, {1})); });
  check_refusal(message, "heaviside: is not yet implemented for tensors with different dtypes, got float64 and float32",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { frac(from_vector<int64_t>({3}, {1})); });
  check_refusal(message, "frac: expected a floating-point tensor, got int64", line);
  line = __LINE__ + 1;
  message = error_of([&] { xlogy(doubles({1.0, 2.0}), doubles({1.0, 2.0, 3.0})); });
  INFO(message);
  CHECK(message.find("[2]") != std::string::npos);  // the broadcast failure names the shapes
  CHECK(ember::testing::names_line(message, line));
}

}  // namespace test_ops_composites_pointwise
