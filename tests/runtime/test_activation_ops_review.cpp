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
#include <tuple>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_activation_ops_review {

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
  for (double value : small_values(400, 71)) points.push_back(value * 5.0);
  const Tensor x = doubles(points).to(dtype);
  const Tensor grad = mul(small_tensor({static_cast<int64_t>(points.size())}, 72), 3.0).to(dtype);
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

TEST_CASE("log_sigmoid and its gradient keep their relative precision far above 0, mish far below it") {
  // log_sigmoid(x) = -log1p(e^-x) ~ -e^-x and its derivative e^-x / (1 + e^-x) for large x: PyTorch's
  // min(x, 0) - log1p(z) and z / (1 + z) with z = e^-|x| hold every digit, where log(1 + z) or
  // 1 - sigmoid(x) round to 0. Relative, not absolute, tolerances (both values are below 1e-8).
  for (const auto& [dtype, at, tolerance] : std::vector<std::tuple<DType, double, double>>{
           {kFloat64, 40.0, 1e-13}, {kFloat64, 700.0, 1e-13}, {kFloat32, 20.0, 1e-5}, {kFloat32, 80.0, 1e-5}}) {
    INFO(std::string(dtype_name(dtype)), " x = ", at);
    const double z = std::exp(-at);
    const Tensor x = doubles({at}).to(dtype);
    const double value = values_of(F::logsigmoid(x))[0];
    const double slope = values_of(dispatch_one(lookup_op("log_sigmoid_backward"), {ones_like(x), x}))[0];
    CHECK(std::abs(value + std::log1p(z)) <= tolerance * std::log1p(z));
    CHECK(std::abs(slope - z / (1.0 + z)) <= tolerance * z);
  }
  // mish(x) ~ x e^x and mish'(x) ~ (1 + x) e^x far below 0, never rounded to 0 before they underflow.
  const double at = -30.0;
  const double t = std::tanh(std::log1p(std::exp(at))), s = 1.0 / (1.0 + std::exp(-at));
  const Tensor x = doubles({at});
  CHECK(std::abs(values_of(F::mish(x))[0] - at * t) <= 1e-13 * std::abs(at * t));
  const double derivative = t + at * s * (1.0 - t * t);
  const double slope = values_of(dispatch_one(lookup_op("mish_backward"), {ones_like(x), x}))[0];
  CHECK(std::abs(slope - derivative) <= 1e-12 * std::abs(derivative));
}

TEST_CASE("hardtanh's bounds: NaN and infinite bounds, float64 bounds float cannot hold, 16-bit inputs") {
  // A NaN bound makes every value NaN (aten's clamp fills NaN); the gradient keeps PyTorch's scalar and
  // CUDA rule, x <= min || x >= max ? 0 : grad, so it passes wherever that is false.
  const std::vector<double> points = {-kInf, -2.0, -1.0, 0.5, 1.0, 2.0, kInf, kNaN};
  const auto value_and_gradient = [&](double low, double high) {
    const Tensor x = leaf_of(points);
    const Tensor y = F::hardtanh(x, low, high);
    sum(mul(y, 1.0)).backward();
    return std::pair{values_of(y), values_of(x.grad())};
  };
  const auto [nan_low, nan_low_gradient] = value_and_gradient(kNaN, 1.0);
  CHECK(std::all_of(nan_low.begin(), nan_low.end(), [](double v) { return std::isnan(v); }));
  CHECK(nan_low_gradient == std::vector<double>{1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0});
  const auto [unbounded, unbounded_gradient] = value_and_gradient(-kInf, kInf);
  check_same_bits(doubles(unbounded), points, "hardtanh(-inf, inf)");
  CHECK(unbounded_gradient == std::vector<double>{0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0});
  // float64 compares with the bounds as doubles: 0.3 and -0.1 exactly are at the bounds, the doubles
  // next to them inside are not (float's 0.3 is above 0.3, float's -0.1 below -0.1).
  const double low = -0.1, high = 0.3;
  const Tensor x = leaf_of({low, std::nextafter(low, 0.0), std::nextafter(high, 0.0), high, std::nextafter(high, 1.0)});
  const Tensor y = F::hardtanh(x, low, high);
  sum(y).backward();
  CHECK(values_of(x.grad()) == std::vector<double>{0.0, 1.0, 1.0, 0.0, 0.0});
  CHECK(values_of(y)[4] == high);
  // bf16 and fp16 compare in float with the bounds rounded to float (min.to<float>()), not to the
  // input's dtype: bf16's -1.296875 is above -1.3 (its own rounding of -1.3) and keeps its gradient.
  for (DType dtype : {kBFloat16, kFloat16}) {
    INFO(std::string(dtype_name(dtype)));
    const Tensor rounded = doubles({-1.3}).to(dtype);
    const Tensor input = rounded.detach().requires_grad_();
    sum(F::hardtanh(input, -1.3, 1.0)).backward();
    CHECK(values_of(input.grad()) == std::vector<double>{values_of(rounded)[0] > -1.3 ? 1.0 : 0.0});
  }
}

TEST_CASE("the backward ops broadcast grad and input both ways, promote mixed dtypes and sum back") {
  // As PyTorch's TensorIterator binary ops: the result has the broadcast shape and the promoted dtype,
  // and each double-backward gradient is summed back to its input's shape, in its input's dtype.
  const std::vector<std::pair<const char*, Attrs>> ops = {{"hardtanh_backward", {{"min_val", -0.5}, {"max_val", 0.7}}},
                                                          {"hardswish_backward", {}},
                                                          {"hardsigmoid_backward", {}},
                                                          {"mish_backward", {}},
                                                          {"log_sigmoid_backward", {}}};
  const std::vector<std::pair<Dims, Dims>> shapes = {{{3, 1}, {3, 4}}, {{3, 4}, {4}}, {{4}, {3, 1}}, {{}, {3, 4}}};
  for (const auto& [name, attrs] : ops) {
    const OpDef& op = lookup_op(name);
    for (const auto& [grad_sizes, input_sizes] : shapes) {
      INFO(std::string(name), " grad ", grad_sizes, " input ", input_sizes);
      // The input scaled by 5 reaches every side of -3 and 3; finite differences stay off the kinks.
      const auto call = [&](const std::vector<Tensor>& in) {
        return dispatch_one(op, {in[0], mul(in[1], 5.0)}, attrs);
      };
      gradcheck_leaves(call, {leaf(grad_sizes, 41), leaf(input_sizes, 42)});
    }
    for (const auto& [grad_dtype, input_dtype, result] : std::vector<std::tuple<DType, DType, DType>>{
             {kFloat64, kFloat32, kFloat64}, {kBFloat16, kFloat32, kFloat32}, {kFloat16, kBFloat16, kFloat32}}) {
      INFO(std::string(name), " ", std::string(dtype_name(grad_dtype)), " with ", std::string(dtype_name(input_dtype)));
      const Tensor grad = small_tensor({5}, 43).to(grad_dtype).requires_grad_();
      const Tensor input = mul(small_tensor({5}, 44), 4.0).to(input_dtype).requires_grad_();
      const Tensor out = dispatch_one(op, {grad, input}, attrs);
      CHECK(out.dtype() == result);
      sum(out).backward();
      CHECK(grad.grad().dtype() == grad_dtype);
      if (input.grad().defined()) CHECK(input.grad().dtype() == input_dtype);
    }
  }
}

}  // namespace test_activation_ops_review
