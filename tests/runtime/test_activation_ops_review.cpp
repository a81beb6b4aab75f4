// Review tests of the registry ops hardtanh, hardswish, hardsigmoid, mish and log_sigmoid and their
// backward ops (runtime/ops/activation_more_ops.cpp) against PyTorch 2.x: F.hardtanh's refusal of
// crossed bounds, the piecewise-linear ops' float32 rounding against PyTorch's CPU formulas
// evaluated in float, hardtanh's bounds (NaN, infinities, doubles float cannot hold), log_sigmoid's
// precision far above 0, and the backward ops with broadcast and mixed-dtype operands.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("F::hardtanh refuses min_val > max_val as torch.nn.functional.hardtanh does, the op clamps") {
  // torch/nn/functional.py (PyTorch 2.3 on): `if min_val > max_val: raise ValueError("min_val cannot be
  // greater than max_val")`, before the dtype is looked at. Equal bounds pass, and so does a NaN bound
  // (the comparison is false); aten::hardtanh itself has clamp's values for any bounds.
  const Tensor x = doubles({-5.0, 0.0, 5.0});
  const int line = __LINE__ + 1;
  const std::string crossed = error_of([&] { F::hardtanh(x, 1.0, -1.0); });
  check_refusal(crossed, "hardtanh: min_val cannot be greater than max_val, got min_val = 1 and max_val = -1", line);
  const int integer_line = __LINE__ + 1;
  const std::string integer_crossed = error_of([&] { F::hardtanh(from_vector<int64_t>({-5, 5}), 2.5, 0.5); });
  check_refusal(integer_crossed, "min_val = 2.5 and max_val = 0.5", integer_line);
  CHECK(values_of(F::hardtanh(x, 0.5, 0.5)) == std::vector<double>{0.5, 0.5, 0.5});
  CHECK(std::isnan(values_of(F::hardtanh(x, kNaN, 1.0))[1]));
  const Attrs crossed_bounds{{"min_val", 1.0}, {"max_val", -1.0}};
  CHECK(values_of(dispatch_one(lookup_op("hardtanh"), {x}, crossed_bounds)) == std::vector<double>{-1.0, -1.0, -1.0});
}

namespace {

// PyTorch's CPU kernels of the piecewise-linear activations (aten/src/ATen/native/cpu/Activation.cpp),
// in T: float for float32, bfloat16 and float16 inputs (the 16-bit ones computed in float and rounded
// once), double for float64.
template <typename T>
T torch_hardswish(T x) {
  return x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
}
template <typename T>
T torch_hardsigmoid(T x) {
  return std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
}
template <typename T>
T torch_hardswish_backward(T grad, T x) {
  return x < T(-3) ? T(0) : x <= T(3) ? grad * (x / T(3) + T(0.5)) : grad;
}
// grad times 1/6 rounded to float (one_sixth(1.0f / 6.0f)), not grad / 6.
template <typename T>
T torch_hardsigmoid_backward(T grad, T x) {
  return x > T(-3) && x < T(3) ? grad * T(1.0f / 6.0f) : T(0);
}
// min.to<T>() and max.to<T>(): float bounds for float32 and the 16-bit dtypes.
template <typename T>
T torch_hardtanh_backward(T grad, T x, double min_val, double max_val) {
  return x <= static_cast<T>(min_val) || x >= static_cast<T>(max_val) ? T(0) : grad;
}

// Equal bits after the exact widening to double: NaN matches NaN, and 0 and -0 differ.
void check_same_bits(const Tensor& got, const std::vector<double>& expected, const char* what) {
  const std::vector<double> values = values_of(got);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO(std::string(what), " element ", i, ": got ", values[i], ", PyTorch's ", expected[i]);
    CHECK(((std::isnan(values[i]) && std::isnan(expected[i])) ||
           (values[i] == expected[i] && std::signbit(values[i]) == std::signbit(expected[i]))));
  }
}

// `formula` applied in T to the (exact) values of the inputs, rounded to `dtype` once.
template <typename T>
std::vector<double> in_precision(DType dtype, const std::vector<double>& first, const std::vector<double>& second,
                                 const std::function<T(T, T)>& formula) {
  std::vector<double> result;
  for (size_t i = 0; i < first.size(); ++i)
    result.push_back(static_cast<double>(formula(static_cast<T>(first[i]), static_cast<T>(second[i]))));
  return values_of(doubles(result).to(dtype == kFloat64 ? kFloat64 : kFloat32).to(dtype));
}

template <typename T>
void check_piecewise_bits(DType dtype) {
  INFO("dtype ", std::string(dtype_name(dtype)));
  // The kinks, NaN, the infinities, -0 and 400 random values over both sides of every kink.
  std::vector<double> points = {-kInf, -4.0, -3.0, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.5, 3.0, 4.0, kInf, kNaN};
  for (double value : random_values(400, 71)) points.push_back(value * 5.0);
  const Tensor x = doubles(points).to(dtype);
  const Tensor grad = mul(random_tensor({static_cast<int64_t>(points.size())}, 72), 3.0).to(dtype);
  const std::vector<double> xs = values_of(x), grads = values_of(grad);
  const auto unary = [&](T (*formula)(T)) {
    return in_precision<T>(dtype, xs, xs, [formula](T value, T) { return formula(value); });
  };
  check_same_bits(F::hardswish(x), unary(torch_hardswish<T>), "hardswish");
  check_same_bits(F::hardsigmoid(x), unary(torch_hardsigmoid<T>), "hardsigmoid");
  check_same_bits(dispatch_one(lookup_op("hardswish_backward"), {grad, x}),
                  in_precision<T>(dtype, grads, xs, torch_hardswish_backward<T>), "hardswish_backward");
  // PyTorch's float64 kernel multiplies by 1/6 rounded to float too (an error of 3e-8); ember keeps
  // the double 1/6 there.
  if (dtype != kFloat64)
    check_same_bits(dispatch_one(lookup_op("hardsigmoid_backward"), {grad, x}),
                    in_precision<T>(dtype, grads, xs, torch_hardsigmoid_backward<T>), "hardsigmoid_backward");
  const Attrs bounds{{"min_val", -1.3}, {"max_val", 0.7}};
  check_same_bits(
      dispatch_one(lookup_op("hardtanh_backward"), {grad, x}, bounds),
      in_precision<T>(dtype, grads, xs, [](T g, T value) { return torch_hardtanh_backward(g, value, -1.3, 0.7); }),
      "hardtanh_backward");
}

}  // namespace

TEST_CASE("hardswish, hardsigmoid and the piecewise backward ops round as PyTorch's CPU kernels, bit for bit") {
  check_piecewise_bits<float>(kFloat32);
  check_piecewise_bits<float>(kBFloat16);
  check_piecewise_bits<float>(kFloat16);
  check_piecewise_bits<double>(kFloat64);
}

TEST_CASE("F::hardtanh refuses integer inputs with bounds int64 cannot hold, as aten's min.toLong() does") {
  // aten::hardtanh converts the bounds of an integer input with Scalar::toLong(), which throws for
  // NaN, the infinities and magnitudes past int64 ("value cannot be converted to type int64_t without
  // overflow"); a non-finite bound must not turn the integer input into float32.
  const Tensor integers = from_vector<int64_t>({-5, 0, 5});
  const std::vector<std::pair<double, double>> bounds = {{-kInf, 1.0}, {-1.0, kInf}, {kNaN, 1.0}, {-1.0, 1e19}};
  for (const auto& [low, high] : bounds) {
    INFO(low, " ", high);
    const int line = __LINE__ + 1;
    const std::string message = error_of([&] { F::hardtanh(integers, low, high); });
    check_refusal(message, "hardtanh: the bounds of an integer input are converted to int64, which cannot hold", line);
    CHECK(message.find(fmt::format("min_val = {} and max_val = {}", low, high)) != std::string::npos);
  }
  // Bounds within int64's range are truncated and keep the dtype, -2^63 included.
  const Tensor clamped = F::hardtanh(integers, -9223372036854775808.0, 2.9);
  CHECK(clamped.dtype() == kInt64);
  CHECK(clamped.to_vector<int64_t>() == std::vector<int64_t>{-5, 0, 2});
}
