// Accuracy of the branch-free float exp, log, log1p, tanh and normal CDF (kernels/fast_math.h) over their whole
// ranges, measured in ulps against double-precision <cmath>, through the ops that use them (so the
// vectorized library code is what gets checked), plus their special values.
#include <limits>

#include "kernels/fast_math.h"
#include "pointwise_test_util.h"

namespace test_fast_math {

using namespace pointwise_test;

namespace {

constexpr float kInfinity = std::numeric_limits<float>::infinity();

// Evenly spaced float32 points covering [low, high].
std::vector<float> sweep(double low, double high, int count) {
  std::vector<float> points(count);
  for (int i = 0; i < count; ++i) points[i] = static_cast<float>(low + (high - low) * i / (count - 1));
  return points;
}

// The largest error of `actual` in units of the float32 spacing at the reference value, over the
// elements whose reference is a normal float (subnormal results are checked separately).
double max_ulp_error(const std::vector<float>& actual, const std::vector<double>& reference) {
  double worst = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const float rounded = static_cast<float>(reference[i]);
    if (std::abs(rounded) < std::numeric_limits<float>::min() || std::isinf(rounded)) continue;
    const double ulp = std::nextafter(std::abs(rounded), kInfinity) - std::abs(rounded);
    worst = std::max(worst, std::abs(actual[i] - reference[i]) / ulp);
  }
  return worst;
}

std::vector<double> reference_of(const std::vector<float>& points, double (*function)(double)) {
  std::vector<double> values;
  for (float point : points) values.push_back(function(static_cast<double>(point)));
  return values;
}

double normal_cdf_reference(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

TEST_CASE("float exp is within 1.5 ulp from underflow to overflow") {
  const std::vector<float> points = sweep(-110.0, 95.0, 400001);
  const std::vector<float> actual = ember::exp(from_vector(points)).to_vector<float>();
  CHECK(max_ulp_error(actual, reference_of(points, std::exp)) <= 1.5);
  for (size_t i = 0; i < points.size(); ++i) {
    const double expected = std::exp(static_cast<double>(points[i]));
    if (expected > std::numeric_limits<float>::max() * 1.0000001) {
      REQUIRE(actual[i] == kInfinity);
    } else if (expected < std::numeric_limits<float>::min()) {  // subnormal results: within 1 step
      REQUIRE(std::abs(actual[i] - expected) <= std::numeric_limits<float>::denorm_min());
    }
  }
}

TEST_CASE("float log is within 1 ulp and log1p within 2, subnormals included") {
  std::vector<float> points = sweep(0.5, 2.0, 200001);  // around 1, where log is small
  for (int i = 0; i <= 200000; ++i) {
    points.push_back(std::exp(static_cast<float>(-103.0 + 191.0 * i / 200000)));  // 1e-45 .. 1e38
  }
  CHECK(max_ulp_error(ember::log(from_vector(points)).to_vector<float>(), reference_of(points, std::log)) <= 1.0);
  std::vector<float> near_zero = sweep(-0.999, 3.0, 200001);
  for (float tiny : {1e-30f, 1e-8f, 3e-8f, 1e-6f, 1e-3f, 1e6f, 1e30f}) {
    near_zero.push_back(tiny);
    near_zero.push_back(-tiny / 2);
  }
  CHECK(max_ulp_error(log1p(from_vector(near_zero)).to_vector<float>(), reference_of(near_zero, std::log1p)) <= 2.0);

  using namespace ember::fn::math;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(log_float(0.0f) == -kInfinity);
  CHECK(log_float(-0.0f) == -kInfinity);
  CHECK(std::isnan(log_float(-1.0f)));
  CHECK(std::isnan(log_float(nan)));
  CHECK(log_float(kInfinity) == kInfinity);
  CHECK(log_float(1.0f) == 0.0f);
  CHECK(log1p_float(-1.0f) == -kInfinity);
  CHECK(std::isnan(log1p_float(-2.0f)));
  CHECK(log1p_float(kInfinity) == kInfinity);
  CHECK(std::isnan(log1p_float(nan)));
  CHECK(log1p_float(1e-30f) == 1e-30f);
}

TEST_CASE("float tanh is within 2 ulp and sigmoid within 3") {
  std::vector<float> points = sweep(-20.0, 20.0, 400001);
  for (float tiny : {1e-30f, 1e-10f, 1e-5f, 0.6249f, 0.6251f}) {
    points.push_back(tiny);
    points.push_back(-tiny);
  }
  const Tensor x = from_vector(points);
  CHECK(max_ulp_error(ember::tanh(x).to_vector<float>(), reference_of(points, std::tanh)) <= 2.0);
  const auto sigmoid_reference = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  // e^-|x| (1 ulp) times the rounded 1 / (1 + e): up to 3 ulp on the negative side.
  CHECK(max_ulp_error(sigmoid(x).to_vector<float>(), reference_of(points, sigmoid_reference)) <= 3.0);
}

TEST_CASE("float gelu and its backward stay within 2e-6 relative of float64 up to |x| = 6") {
  const std::vector<float> points = sweep(-6.0, 6.0, 200001);
  const Tensor x = from_vector(points).requires_grad_();
  const Tensor y = gelu(x);
  y.backward(ones_like(y));
  const std::vector<float> values = y.to_vector<float>();
  const std::vector<float> grads = x.grad().to_vector<float>();
  double worst_value = 0.0;
  int bad_grads = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const double v = points[i];
    const double cdf = normal_cdf_reference(v);
    const double density = std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    worst_value = std::max(worst_value, std::abs(values[i] - v * cdf) / std::max(std::abs(v * cdf), 1e-30));
    // The derivative crosses zero near x = -0.75: there only an absolute bound is meaningful.
    const double grad = cdf + v * density;
    if (std::abs(grads[i] - grad) > 2e-6 * std::abs(grad) + 2e-7) ++bad_grads;
  }
  CHECK(worst_value < 2e-6);
  CHECK(bad_grads == 0);
}

TEST_CASE("fast math special values") {
  using namespace ember::fn::math;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(exp_float(nan)));
  CHECK(exp_float(-kInfinity) == 0.0f);
  CHECK(exp_float(kInfinity) == kInfinity);
  CHECK(exp_float(0.0f) == 1.0f);
  CHECK(std::isnan(tanh_float(nan)));
  CHECK(tanh_float(kInfinity) == 1.0f);
  CHECK(tanh_float(-kInfinity) == -1.0f);
  CHECK(std::signbit(tanh_float(-0.0f)));
  float density = 0.0f;
  CHECK(std::isnan(normal_cdf_float(nan, density)));
  CHECK(normal_cdf_float(kInfinity, density) == 1.0f);
  CHECK(normal_cdf_float(-kInfinity, density) == 0.0f);
  CHECK(density == 0.0f);
  CHECK(normal_cdf_float(0.0f, density) == 0.5f);
  CHECK(density == doctest::Approx(0.3989422804).epsilon(1e-7));
  // Far tails keep their relative precision (PyTorch's 1 + erf(x) rounds these to 0).
  CHECK(normal_cdf_float(-8.0f, density) == doctest::Approx(normal_cdf_reference(-8.0)).epsilon(1e-5));
}

TEST_CASE("float expm1 and erf are within 2.5 ulp, tiny arguments and signed zeros included") {
  std::vector<float> points = sweep(-20.0, 88.0, 400001);
  std::vector<float> erf_points = sweep(-6.0, 6.0, 400001);
  for (float tiny : {1e-30f, 1e-10f, 1e-5f, 0.6931f, 0.6932f, 0.9999f, 1.0001f}) {
    for (std::vector<float>* list : {&points, &erf_points}) {
      list->push_back(tiny);
      list->push_back(-tiny);
    }
  }
  CHECK(max_ulp_error(ember::expm1(from_vector(points)).to_vector<float>(), reference_of(points, std::expm1)) <= 2.5);
  const std::vector<float> erf_values = ember::erf(from_vector(erf_points)).to_vector<float>();
  // 2.0 with FMAs (mul_add where the target has them: EMBER_NATIVE, the default), 2.2 without (the asan preset).
  CHECK(max_ulp_error(erf_values, reference_of(erf_points, std::erf)) <= 2.5);

  using namespace ember::fn::math;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(expm1_float(nan)));
  CHECK(expm1_float(-kInfinity) == -1.0f);
  CHECK(expm1_float(kInfinity) == kInfinity);
  CHECK(expm1_float(100.0f) == kInfinity);
  CHECK(std::signbit(expm1_float(-0.0f)));
  CHECK(expm1_float(1e-30f) == 1e-30f);
  CHECK(std::isnan(erf_float(nan)));
  CHECK(erf_float(kInfinity) == 1.0f);
  CHECK(erf_float(-kInfinity) == -1.0f);
  CHECK(std::signbit(erf_float(-0.0f)));
  CHECK(erf_float(1e-30f) == doctest::Approx(1.1283791670955126e-30).epsilon(1e-7));
}

TEST_CASE("float sin and cos are within 0.5001 ulp from tiny to the largest floats") {
  std::vector<float> points = sweep(-20.0, 20.0, 200001);
  // Huge arguments, where the reduction needs 2/pi far past float's precision, and close to
  // multiples of pi/2 (the floats nearest to 1e5 pi/2 and 2^24 pi).
  for (float big : {1e5f * 1.57079637f, 16777216.0f * 3.14159274f, 1e10f, 1e20f, 1e30f, 3.4e38f, 12345.678f}) {
    points.push_back(big);
    points.push_back(-big);
    points.push_back(std::nextafter(big, 0.0f));
  }
  for (float tiny : {1e-40f, 1e-30f, 1e-8f, 3e-4f}) points.push_back(tiny);
  const Tensor x = from_vector(points);
  CHECK(max_ulp_error(ember::sin(x).to_vector<float>(), reference_of(points, std::sin)) <= 0.5001);
  CHECK(max_ulp_error(ember::cos(x).to_vector<float>(), reference_of(points, std::cos)) <= 0.5001);

  using namespace ember::fn::math;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float special : {nan, kInfinity, -kInfinity}) {
    CHECK(std::isnan(sin_float(special)));
    CHECK(std::isnan(cos_float(special)));
  }
  CHECK(std::signbit(sin_float(-0.0f)));
  CHECK(cos_float(-0.0f) == 1.0f);
  CHECK(sin_float(1e-40f) == 1e-40f);  // a subnormal keeps its value
}

}  // namespace test_fast_math
