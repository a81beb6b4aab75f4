// Pointwise math and gather against PyTorch 2.x where ember once differed: log1p's signed zero,
// pow's and div's gradients in PyTorch's formulas, gather's 0-d and empty indices. Expected values
// come from C's <cmath> in double.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/fast_math.h"
#include "pointwise_test_util.h"

namespace test_pointwise_pytorch_parity {

using namespace pointwise_test;

namespace {

double relative_error(double actual, double expected) { return std::abs(actual - expected) / std::abs(expected); }

}  // namespace

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
      CHECK(relative_error(gradient[i], expected) < 1e-13);
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
      CHECK(relative_error(gradient[i], expected) < 2e-6);
    }
  }
}

// PyTorch's div_tensor_other_backward is -grad * ((a / b) / b). Forming b^2 instead overflows a
// float16 divisor past 256 (65504 is float16's largest value), so the gradient became -0.
TEST_CASE("div's divisor gradient does not square the divisor") {
  SUBCASE("float16, divisor past 256") {
    // Gradients of float16's normal range (above 6.1e-5), where it keeps 11 significant bits.
    const std::vector<double> divisors = {300.0, -500.0, 3.0};
    const Tensor dividend = tensor_from({30.0, 60.0, -0.75}, {3}, kFloat16);
    Tensor divisor = tensor_from(divisors, {3}, kFloat16).requires_grad_();
    div(dividend, divisor).sum().backward();
    const std::vector<double> gradient = values_of(divisor.grad());
    const std::vector<double> a = values_of(dividend);
    for (size_t i = 0; i < divisors.size(); ++i) {
      const double expected = -a[i] / (divisors[i] * divisors[i]);
      CHECK(relative_error(gradient[i], expected) < 2e-3);  // float16's precision
    }
  }
  SUBCASE("float32 dividend, float16 divisor: computed in float32, rounded once") {
    const Tensor dividend = tensor_from({1.0, -2.5}, {2}, kFloat32);
    Tensor divisor = tensor_from({3.3, 0.7}, {2}, kFloat16).requires_grad_();
    div(dividend, divisor).sum().backward();
    CHECK(divisor.grad().dtype() == kFloat16);
    const std::vector<double> gradient = values_of(divisor.grad());
    const std::vector<double> a = values_of(dividend);
    const std::vector<double> b = values_of(divisor);
    for (size_t i = 0; i < b.size(); ++i) {
      const double expected = -a[i] / (b[i] * b[i]);
      // float16(float32(x)) is the nearest float16 here: no float32 rounding lands on a float16 midpoint.
      CHECK(gradient[i] == values_of(tensor_from({expected}, {1}, kFloat16))[0]);
    }
  }
}

// PyTorch's gather_shape_check compares ensure_nonempty_dim and ensure_nonempty_size: a 0-d tensor
// counts as one element along dim 0, so a 0-d input takes a one-dim index and a one-dim input a
// 0-d index. Its gather meta skips both the dtype and the shape checks for an empty index.
TEST_CASE("gather takes a 0-d input or index as one element along dim 0, and any empty index") {
  SUBCASE("0-d input, one-dim index") {
    Tensor input = scalar_tensor(5.0, {.dtype = kFloat64}).requires_grad_();
    const Tensor output = gather(input, 0, from_vector<int64_t>({0, 0, 0}, Dims{3}));
    CHECK(output.sizes() == Dims{3});
    CHECK(values_of(output) == std::vector<double>{5.0, 5.0, 5.0});
    output.sum().backward();
    CHECK(input.grad().item<double>() == 3.0);
    CHECK_THROWS_AS(gather(input, 0, from_vector<int64_t>({1}, Dims{1})), Error);  // out of range
    CHECK_THROWS_AS(gather(input, 0, from_vector<int64_t>({0}, Dims{1, 1})), Error);
  }
  SUBCASE("one-dim input, 0-d index") {
    Tensor input = tensor_from({10.0, 20.0, 30.0}, {3}).requires_grad_();
    const Tensor output = gather(input, 0, scalar_tensor(2.0, {.dtype = kInt64}));
    CHECK(output.dim() == 0);
    CHECK(output.item<double>() == 30.0);
    output.backward();
    CHECK(values_of(input.grad()) == std::vector<double>{0.0, 0.0, 1.0});
  }
  SUBCASE("empty index of any dtype and size") {
    Tensor input = tensor_from({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
    for (DType dtype : {kInt64, kInt32}) {
      const Tensor output = gather(input, 1, zeros({5, 0}, {.dtype = dtype}));
      CHECK(output.sizes() == Dims{5, 0});
      CHECK(output.dtype() == kFloat64);
      output.sum().backward();
      CHECK(values_of(input.grad()) == std::vector<double>(6, 0.0));
    }
    CHECK_THROWS_AS(gather(input, 1, zeros({2, 1}, {.dtype = kInt32})), Error);  // int64 when not empty
  }
}

}  // namespace test_pointwise_pytorch_parity
