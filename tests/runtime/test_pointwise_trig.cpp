// sin and cos through the registry: every float dtype, integer inputs (float32, as torch's), the
// special values, and gradients against their closed forms. Accuracy over the float range is
// test_fast_math's; random values and finite differences are the conformance suite's.
#include <cmath>
#include <limits>

#include "pointwise_test_util.h"

namespace test_pointwise_trig {

using namespace pointwise_test;

TEST_CASE("sin and cos in every float dtype: NaN for NaN and the infinities, -0.0 kept by sin") {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    INFO(dtype_name(dtype));
    const Tensor x = tensor_from({-0.0, kNaN, kInf, -kInf, 2.5, -1000.0}, {6}, dtype);
    const std::vector<double> stored = values_of(x);
    const std::vector<double> s = values_of(ember::sin(x));
    const std::vector<double> c = values_of(ember::cos(x));
    CHECK(s[0] == 0.0);
    CHECK(std::signbit(s[0]));
    CHECK(c[0] == 1.0);
    for (int i : {1, 2, 3}) {
      CHECK(std::isnan(s[i]));
      CHECK(std::isnan(c[i]));
    }
    const Tolerance tolerance = tolerance_for(dtype);
    check_close({s[4], s[5]}, {std::sin(stored[4]), std::sin(stored[5])}, tolerance, "sin");
    check_close({c[4], c[5]}, {std::cos(stored[4]), std::cos(stored[5])}, tolerance, "cos");
  }
  CHECK(ember::sin(from_vector<int64_t>({1, 2})).dtype() == kFloat32);
  CHECK(values_of(ember::cos(from_vector<int32_t>({3})))[0] == doctest::Approx(std::cos(3.0)).epsilon(1e-6));
}

TEST_CASE("sin's gradient is cos and cos's is -sin") {
  const std::vector<double> at = {-3.0, -0.5, 0.0, 1e-9, 2.0, 1e6};
  const Tensor x = tensor_from(at, {6}).requires_grad_();
  sum(add(ember::sin(x), mul(ember::cos(x), 2.0))).backward();
  const std::vector<double> grad = values_of(x.grad());
  for (size_t i = 0; i < at.size(); ++i) {
    CHECK(grad[i] == doctest::Approx(std::cos(at[i]) - 2.0 * std::sin(at[i])).epsilon(1e-14));
  }
}

}  // namespace test_pointwise_trig
