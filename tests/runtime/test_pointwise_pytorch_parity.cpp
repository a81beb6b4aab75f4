// Pointwise math against PyTorch 2.x's rules where ember once differed: signed zeros through the
// float kernels. Expected values come from C's <cmath> in double (what PyTorch's kernels call).
#include <cmath>
#include <string>
#include <vector>

#include "kernels/fast_math.h"
#include "pointwise_test_util.h"

using namespace pointwise_test;

// C's log1p (and so PyTorch's, on the CPU through Sleef and on CUDA through log1pf) keeps the sign
// of a zero: log1p(-0.0) is -0.0, so 1 / log1p(x) keeps its sign at -0.0. Enough elements to reach
// the vectorized loop as well as its tail.
TEST_CASE("log1p keeps the sign of a zero in every floating dtype") {
  std::vector<double> values(37, -0.0);
  for (size_t i = 0; i < values.size(); i += 2) values[i] = 0.0;
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    const std::vector<double> result = values_of(ember::log1p(tensor_from(values, {37}, dtype)));
    const std::string name(dtype_name(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      CAPTURE(name);
      CAPTURE(i);
      CHECK(result[i] == 0.0);
      CHECK(std::signbit(result[i]) == std::signbit(std::log1p(values[i])));
    }
  }
  CHECK(std::signbit(ember::fn::math::log1p_float(-0.0f)));
  CHECK_FALSE(std::signbit(ember::fn::math::log1p_float(0.0f)));
}

// PyTorch's pow_backward_exponent takes log(base) after converting the base to the result type:
// d(a^b)/db = a^b log(a) is as precise as the result's dtype, whatever the base's dtype.
TEST_CASE("pow's exponent gradient takes the log of the base in the result's dtype") {
  const std::vector<double> exponents = {0.7, 1.3, -2.1};
  SUBCASE("int64 base, float64 exponent") {
    const std::vector<int64_t> bases = {3, 7, 11};
    Tensor exponent = tensor_from(exponents, {3}).requires_grad_();
    ember::pow(from_vector(bases, Dims{3}), exponent).sum().backward();
    const std::vector<double> gradient = values_of(exponent.grad());
    for (size_t i = 0; i < bases.size(); ++i) {
      const double base = static_cast<double>(bases[i]);
      const double expected = std::pow(base, exponents[i]) * std::log(base);
      CHECK(gradient[i] == doctest::Approx(expected).epsilon(1e-13));
    }
  }
  SUBCASE("float16 base, float32 exponent") {
    const Tensor base = tensor_from({3.3, 7.1, 0.45}, {3}, kFloat16);
    Tensor exponent = tensor_from(exponents, {3}, kFloat32).requires_grad_();
    ember::pow(base, exponent).sum().backward();
    CHECK(exponent.grad().dtype() == kFloat32);
    const std::vector<double> gradient = values_of(exponent.grad());
    const std::vector<double> base_values = values_of(base);          // the float16 values
    const std::vector<double> exponent_values = values_of(exponent);  // the float32 values
    for (size_t i = 0; i < base_values.size(); ++i) {
      const double expected = std::pow(base_values[i], exponent_values[i]) * std::log(base_values[i]);
      CHECK(gradient[i] == doctest::Approx(expected).epsilon(2e-6));
    }
  }
}
