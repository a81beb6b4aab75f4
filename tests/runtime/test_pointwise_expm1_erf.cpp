// expm1 and erf through the registry in float64 and 16-bit floats: special values, integer inputs
// (float32, as torch's), and gradients against their closed forms (random values and finite
// differences are the conformance suite's part; float32 accuracy is test_fast_math's).
#include <cmath>
#include <limits>
#include <numbers>

#include "pointwise_test_util.h"

namespace test_pointwise_expm1_erf {

using namespace pointwise_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("expm1 and erf keep -0.0, saturate at the infinities and pass NaN, in every float dtype") {
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    INFO(dtype_name(dtype));
    const Tensor x = tensor_from({-0.0, -kInf, kInf, kNaN, 1e-4}, {5}, dtype);
    const std::vector<double> stored = values_of(x);
    const std::vector<double> e = values_of(ember::expm1(x));
    CHECK(e[0] == 0.0);
    CHECK(std::signbit(e[0]));
    CHECK(e[1] == -1.0);
    CHECK(e[2] == kInf);
    CHECK(std::isnan(e[3]));
    CHECK(e[4] == doctest::Approx(std::expm1(stored[4])).epsilon(tolerance_for(dtype).relative));
    const std::vector<double> f = values_of(ember::erf(x));
    CHECK(std::signbit(f[0]));
    CHECK(f[1] == -1.0);
    CHECK(f[2] == 1.0);
    CHECK(std::isnan(f[3]));
    CHECK(f[4] == doctest::Approx(std::erf(stored[4])).epsilon(tolerance_for(dtype).relative));
  }
  CHECK(ember::expm1(from_vector<int64_t>({0, 1})).dtype() == kFloat32);
  CHECK(ember::erf(from_vector<int32_t>({0, 1})).dtype() == kFloat32);
  CHECK(values_of(ember::erf(from_vector<int64_t>({0, 1})))[1] == doctest::Approx(std::erf(1.0)).epsilon(1e-6));
}

TEST_CASE("expm1's gradient is e^x and erf's 2 / sqrt(pi) e^(-x^2)") {
  const std::vector<double> at = {-3.0, -0.5, 0.0, 1e-9, 2.0};
  const Tensor x = tensor_from(at, {5}).requires_grad_();
  sum(add(ember::expm1(x), ember::erf(x))).backward();
  const std::vector<double> grad = values_of(x.grad());
  for (size_t i = 0; i < at.size(); ++i) {
    const double expected = std::exp(at[i]) + 2.0 / std::sqrt(std::numbers::pi) * std::exp(-at[i] * at[i]);
    CHECK(grad[i] == doctest::Approx(expected).epsilon(1e-14));
  }
}

}  // namespace test_pointwise_expm1_erf
