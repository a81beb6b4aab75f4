// torch.special's pointwise functions against long-double references (special_reference.h) over
// wide grids: float64 within 1e-13 relative (absolute near the zeros of lgamma and digamma on the
// negative axis, where relative error has no bound), float32 within 1 ulp of the true value of
// its float input; torch's values at the poles, the ends of the domains, infinities and NaN;
// integer and 16-bit inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/special.h"
#include "special_reference.h"

namespace test_special_values {

using namespace ember;
namespace reference = ember::testing::special_reference;

namespace {

constexpr double kInf = INFINITY;

struct Case {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> expected;
  std::vector<double> grid;
  double absolute_floor = 0;  // errors are relative to max(|expected|, absolute_floor)
};

std::vector<double> spaced(double low, double high, int count) {
  std::vector<double> values;
  for (int i = 0; i < count; ++i) values.push_back(low + (high - low) * i / (count - 1));
  return values;
}
std::vector<double> logarithmic(double low_exponent, double high_exponent, int count) {
  std::vector<double> values;
  for (double exponent : spaced(low_exponent, high_exponent, count)) values.push_back(std::pow(10.0, exponent));
  return values;
}
std::vector<double> join(std::vector<std::vector<double>> parts) {
  std::vector<double> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}
std::vector<double> negated(std::vector<double> values) {
  for (double& value : values) value = -value;
  return values;
}
// Grids miss the negative integers (poles) by a fraction that is not a simple binary number.
std::vector<double> off_integers(double low, double high, int count) {
  std::vector<double> values = spaced(low, high, count);
  for (double& value : values)
    if (value == std::floor(value)) value += 0.1234567;
  return values;
}

std::vector<Case> cases() {
  const std::vector<double> positive = join({logarithmic(-300, 300, 121),
                                             spaced(0.01, 30, 301),
                                             {1.0, 2.0, 1.5, 2.5, 10.0, 1.4616321449683622, 1 + 1e-9, 2 - 1e-9}});
  const std::vector<double> negative = off_integers(-60, -0.001, 251);
  const std::vector<double> bessel = join({spaced(-700, 700, 281), logarithmic(-6, 2.8, 50), {24.999, 25.001}});
  std::vector<Case> all = {
      {"lgamma", [](const Tensor& x) { return ember::lgamma(x); }, reference::lgamma, positive},
      {"lgamma negative", [](const Tensor& x) { return ember::lgamma(x); }, reference::lgamma, negative, 1.0},
      // The long-double digamma is itself only absolutely accurate where it crosses zero (1.4616).
      {"digamma", [](const Tensor& x) { return ember::digamma(x); }, reference::digamma, positive, 1e-3},
      {"digamma negative", [](const Tensor& x) { return special::psi(x); }, reference::digamma, negative, 1.0},
      {"erfinv", [](const Tensor& x) { return ember::erfinv(x); }, reference::erfinv,
       join({spaced(-0.999, 0.999, 201), {1 - 1e-16, -1 + 1e-12, 1e-300, 0.5, -0.75, 1 - 1e-7, 1 - 1e-8}})},
      {"ndtri", [](const Tensor& x) { return special::ndtri(x); }, reference::ndtri,
       join({logarithmic(-300, -0.31, 121), spaced(0.001, 0.999, 201), {1 - 1e-16, 0.5, 0.25, 0.75, 1e-320}})},
      {"erfcx", [](const Tensor& x) { return special::erfcx(x); }, reference::erfcx,
       join({spaced(-26, 40, 331), logarithmic(-5, 300, 61)})},
      {"log_ndtr", [](const Tensor& x) { return special::log_ndtr(x); }, reference::log_ndtr,
       join({spaced(-140, 12, 305), negated(logarithmic(-5, 2, 30)), {-1.0, -1 - 1e-9}})},
      {"i0", [](const Tensor& x) { return ember::i0(x); }, [](double x) { return reference::bessel_i(0, x, false); },
       bessel},
      {"i0e", [](const Tensor& x) { return special::i0e(x); }, [](double x) { return reference::bessel_i(0, x, true); },
       bessel},
      {"i1", [](const Tensor& x) { return special::i1(x); }, [](double x) { return reference::bessel_i(1, x, false); },
       bessel},
      {"i1e", [](const Tensor& x) { return special::i1e(x); }, [](double x) { return reference::bessel_i(1, x, true); },
       bessel},
  };
  for (int n : {1, 2, 3, 4, 7, 15, 30}) {
    all.push_back({"polygamma " + std::to_string(n), [n](const Tensor& x) { return ember::polygamma(n, x); },
                   [n](double x) { return reference::polygamma(n, x); },
                   join({logarithmic(-3, 3, 41), off_integers(-20, -0.01, 61)})});
  }
  return all;
}

}  // namespace

TEST_CASE("special functions: float64 within 1e-13 of long-double references over wide grids") {
  for (const Case& c : cases()) {
    INFO(c.name);
    const std::vector<double> got = c.op(ember::from_vector<double>(c.grid)).to_vector<double>();
    double worst = 0;
    for (size_t i = 0; i < c.grid.size(); ++i) {
      const double expected = c.expected(c.grid[i]);
      INFO("x = ", c.grid[i], ": got ", got[i], ", expected ", expected);
      if (!std::isfinite(expected)) {
        CHECK(got[i] == expected);
        continue;
      }
      const double error = std::abs(got[i] - expected) / std::max({std::abs(expected), c.absolute_floor, 1e-300});
      CHECK(error <= 1e-13);
      worst = std::max(worst, error);
    }
    MESSAGE(c.name, ": worst float64 error ", worst);
  }
}

TEST_CASE("special functions: float32 within 1 ulp of the true value of each float input") {
  for (const Case& c : cases()) {
    INFO(c.name);
    std::vector<float> inputs;
    for (double x : c.grid) inputs.push_back(static_cast<float>(x));
    const std::vector<float> got = c.op(ember::from_vector<float>(inputs)).to_vector<float>();
    REQUIRE(c.op(ember::from_vector<float>(inputs)).dtype() == kFloat32);
    double worst = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const double expected = c.expected(inputs[i]);
      INFO("x = ", inputs[i], ": got ", got[i], ", expected ", expected);
      if (!std::isfinite(static_cast<float>(expected))) {
        CHECK(got[i] == static_cast<float>(expected));  // also where float overflows
        continue;
      }
      const double ulps = reference::float_ulps(got[i], expected);
      CHECK(ulps <= 1.0);
      worst = std::max(worst, ulps);
    }
    MESSAGE(c.name, ": worst float32 error ", worst, " ulp");
  }
}

TEST_CASE("special functions: torch's values at poles, domain ends, infinities and NaN") {
  const double nan = NAN;
  auto values = [](const Tensor& t) { return t.to_vector<double>(); };
  const Tensor x = ember::from_vector<double>({0.0, -0.0, -1.0, -3.0, kInf, -kInf, nan});
  const std::vector<double> lgamma_x = values(ember::lgamma(x));
  for (int i = 0; i < 6; ++i) CHECK(lgamma_x[i] == kInf);
  CHECK(std::isnan(lgamma_x[6]));
  const std::vector<double> digamma_x = values(ember::digamma(x));
  CHECK(digamma_x[0] == -kInf);
  CHECK(digamma_x[1] == kInf);
  CHECK(std::isnan(digamma_x[2]));
  CHECK(std::isnan(digamma_x[3]));
  CHECK(digamma_x[4] == kInf);
  CHECK(std::isnan(digamma_x[5]));
  CHECK(std::isnan(digamma_x[6]));
  // polygamma: (-1)^(n+1) n! zeta(n+1, x), whose zeta is +inf at the poles.
  const std::vector<double> trigamma_x = values(ember::polygamma(1, x));
  CHECK(trigamma_x[0] == kInf);
  CHECK(trigamma_x[3] == kInf);
  CHECK(trigamma_x[4] == 0.0);
  CHECK(std::isnan(trigamma_x[5]));
  CHECK(values(ember::polygamma(2, x))[2] == -kInf);
  CHECK(std::isnan(values(ember::polygamma(0, x))[2]));  // polygamma(0) is digamma
  const std::vector<double> ends = values(ember::erfinv(ember::from_vector<double>({1.0, -1.0, 1.5, -2.0, 0.0, -0.0})));
  CHECK(ends[0] == kInf);
  CHECK(ends[1] == -kInf);
  CHECK(std::isnan(ends[2]));
  CHECK(std::isnan(ends[3]));
  CHECK(ends[4] == 0.0);
  CHECK(std::signbit(ends[5]));
  const std::vector<double> ndtri_x = values(special::ndtri(ember::from_vector<double>({0.0, 1.0, -0.1, 1.1, 0.5})));
  CHECK(ndtri_x[0] == -kInf);
  CHECK(ndtri_x[1] == kInf);
  CHECK(std::isnan(ndtri_x[2]));
  CHECK(std::isnan(ndtri_x[3]));
  CHECK(ndtri_x[4] == 0.0);
  const Tensor infinities = ember::from_vector<double>({kInf, -kInf, nan, 0.0});
  const std::vector<double> log_ndtr_x = values(special::log_ndtr(infinities));
  CHECK(log_ndtr_x[0] == 0.0);
  CHECK(log_ndtr_x[1] == -kInf);
  CHECK(std::isnan(log_ndtr_x[2]));
  CHECK(log_ndtr_x[3] == doctest::Approx(-std::numbers::ln2).epsilon(1e-15));
  const std::vector<double> erfcx_x = values(special::erfcx(infinities));
  CHECK(erfcx_x[0] == 0.0);
  CHECK(erfcx_x[1] == kInf);
  CHECK(std::isnan(erfcx_x[2]));
  CHECK(erfcx_x[3] == 1.0);
  const std::vector<double> i0_x = values(ember::i0(infinities));
  CHECK(i0_x[0] == kInf);
  CHECK(i0_x[1] == kInf);
  CHECK(std::isnan(i0_x[2]));
  CHECK(i0_x[3] == 1.0);
  CHECK(values(special::i0e(infinities))[0] == 0.0);
  CHECK(values(special::i0e(infinities))[3] == 1.0);
  CHECK(values(special::i1(infinities))[1] == -kInf);
  CHECK(values(special::i1(infinities))[3] == 0.0);
  CHECK(std::signbit(values(special::i1e(infinities))[1]));
  CHECK(std::isnan(values(special::i1e(infinities))[2]));
}

TEST_CASE("special functions: closed forms from the mathematics") {
  const double pi = std::numbers::pi, gamma = std::numbers::egamma, zeta3 = 1.2020569031595942854;
  auto at = [](const Tensor& t) { return t.to_vector<double>()[0]; };
  const Tensor half = ember::from_vector<double>({0.5}), one = ember::from_vector<double>({1.0});
  CHECK(at(ember::lgamma(half)) == doctest::Approx(0.5 * std::log(pi)).epsilon(1e-15));
  CHECK(at(ember::digamma(one)) == doctest::Approx(-gamma).epsilon(1e-15));
  CHECK(at(ember::digamma(half)) == doctest::Approx(-gamma - 2 * std::numbers::ln2).epsilon(1e-15));
  // At the double nearest digamma's positive zero, relative precision holds (value from mpmath).
  CHECK(at(ember::digamma(ember::from_vector<double>({1.4616321449683622}))) ==
        doctest::Approx(-9.2412655217294275e-17).epsilon(1e-14));
  CHECK(at(ember::polygamma(1, one)) == doctest::Approx(pi * pi / 6).epsilon(1e-15));
  CHECK(at(ember::polygamma(1, half)) == doctest::Approx(pi * pi / 2).epsilon(1e-15));
  CHECK(at(ember::polygamma(2, one)) == doctest::Approx(-2 * zeta3).epsilon(1e-15));
  CHECK(at(ember::polygamma(3, one)) == doctest::Approx(std::pow(pi, 4) / 15).epsilon(1e-15));
  // The reflection psi1(x) + psi1(1 - x) = pi^2 / sin^2(pi x) checks the negative axis.
  const double x = -3.3;
  const double reflected = at(ember::polygamma(1, ember::from_vector<double>({x}))) +
                           at(ember::polygamma(1, ember::from_vector<double>({1 - x})));
  CHECK(reflected == doctest::Approx(pi * pi / std::pow(std::sin(pi * x), 2)).epsilon(1e-14));
  // erf(erfinv(y)) = y and ndtr(ndtri(p)) = p.
  const Tensor y = ember::from_vector<double>({-0.9, -0.3, 0.2, 0.7, 0.999});
  const std::vector<double> round_trip = ember::erf(ember::erfinv(y)).to_vector<double>();
  const std::vector<double> cdf_round_trip = special::ndtr(special::ndtri(add(mul(y, 0.5), 0.5))).to_vector<double>();
  for (size_t i = 0; i < round_trip.size(); ++i) {
    CHECK(round_trip[i] == doctest::Approx(y.to_vector<double>()[i]).epsilon(1e-15));
    CHECK(cdf_round_trip[i] == doctest::Approx(0.5 * y.to_vector<double>()[i] + 0.5).epsilon(1e-15));
  }
}

TEST_CASE("special functions: integers become float32, 16-bit floats keep their dtype") {
  const Tensor integers = ember::from_vector<int64_t>({1, 2, 3, 4});
  const Tensor lgamma_integers = ember::lgamma(integers);
  CHECK(lgamma_integers.dtype() == kFloat32);
  const std::vector<float> values = lgamma_integers.to_vector<float>();
  CHECK(values[0] == 0.0f);
  CHECK(values[1] == 0.0f);
  CHECK(values[2] == static_cast<float>(std::log(2.0)));
  CHECK(values[3] == static_cast<float>(std::log(6.0)));
  for (const Tensor& result :
       {ember::digamma(integers), ember::polygamma(2, integers), ember::erfinv(integers), ember::i0(integers),
        special::i1e(integers), special::ndtri(integers), special::log_ndtr(integers), special::erfcx(integers)})
    CHECK(result.dtype() == kFloat32);
  for (DType dtype : {kBFloat16, kFloat16}) {
    INFO(dtype);
    const Tensor x = ember::from_vector<double>({0.3, 1.7, 4.5}).to(dtype);
    const Tensor result = ember::lgamma(x);
    CHECK(result.dtype() == dtype);
    const std::vector<double> stored = x.to(kFloat64).to_vector<double>();
    const std::vector<double> got = result.to(kFloat64).to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == doctest::Approx(reference::lgamma(stored[i])).epsilon(dtype == kBFloat16 ? 8e-3 : 1e-3));
  }
}

}  // namespace test_special_values
