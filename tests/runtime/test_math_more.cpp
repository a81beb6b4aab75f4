// The math composites of runtime/functional_math_more.h against float64 references written here as
// plain loops (PyTorch's formulas, read from ATen): lerp, addcmul, addcdiv, isclose, allclose,
// nan_to_num, logaddexp(2) and hypot (the reductions, median and quantile are in
// test_math_more_statistics.cpp). NaN, infinities and -0.0, broadcasting, non-contiguous and empty
// inputs, integer and bool dtypes, gradients by central differences, and every error message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "math_more_reference.h"

namespace test_math_more {

using namespace ember;
using namespace ember::testing;
using namespace ember::testing::math_more;

// ---- lerp ----

TEST_CASE("lerp with a double weight follows PyTorch's two forms, broadcasting, exactly in float64") {
  const Tensor start = doubles({0.25, -1.5, kInf, kNaN, -0.0, 3.0}, {2, 3});
  const Tensor end = doubles({2.0, -0.0, 7.5});
  for (double weight : {0.3, 0.5, -0.49, 1.0, -2.0, 0.0, 1.7}) {
    INFO("weight " << weight);
    const Tensor result = lerp(start, end, weight);
    CHECK(result.sizes() == Dims{2, 3});
    check_values(result, pointwise_reference({operand_of(start), operand_of(end)},
                                             [&](const auto& v) { return lerp_reference(v[0], v[1], weight); }));
  }
  // Weight 1 gives `end` exactly, which start + 1 * (end - start) would not.
  const Tensor near = doubles({0.1, 1e-17, 3.0});
  const Tensor far = doubles({0.7, 1.0, 1e20});
  check_values(lerp(near, far, 1.0), values_of(far));
}

TEST_CASE("lerp with a tensor weight broadcasts three shapes and reads non-contiguous inputs") {
  const Tensor start = small_tensor({3, 1, 2}, 11).transpose(0, 2);  // [2, 1, 3], not contiguous
  const Tensor end = small_tensor({4, 1}, 12);
  const Tensor weight = doubles({0.5, -0.5, 0.49, 1.5, 1.0, -0.51}, {2, 1, 1, 3}).squeeze(1);  // [2, 1, 3]
  CHECK_FALSE(start.is_contiguous());
  const Tensor result = lerp(start, end, weight);
  CHECK(result.sizes() == Dims{2, 4, 3});
  check_values(result, pointwise_reference({operand_of(start), operand_of(end), operand_of(weight)},
                                           [](const auto& v) { return lerp_reference(v[0], v[1], v[2]); }));
  // Size 0 broadcasts like any other size.
  CHECK(lerp(doubles({}, {0, 3}), doubles({1.0, 2.0, 3.0}), 0.25).sizes() == Dims{0, 3});
}

TEST_CASE("lerp computes float32 close to float64 and 16-bit values in float32, rounded once") {
  const Tensor start = small_tensor({5}, 13);
  const Tensor end = small_tensor({5}, 14);
  const std::vector<double> expected = pointwise_reference(
      {operand_of(start), operand_of(end)}, [](const auto& v) { return lerp_reference(v[0], v[1], 0.3); });
  const Tensor single = lerp(start.to(kFloat32), end.to(kFloat32), 0.3);
  CHECK(single.dtype() == kFloat32);
  check_values(single, expected, 1e-6);
  const Tensor half = lerp(start.to(kBFloat16), end.to(kBFloat16), 0.3);
  CHECK(half.dtype() == kBFloat16);
  // One rounding of a float32 result: within half a bfloat16 ulp (2^-9 relative) of the exact value
  // of the rounded inputs.
  const std::vector<double> rounded =
      pointwise_reference({operand_of(start.to(kBFloat16)), operand_of(end.to(kBFloat16))},
                          [](const auto& v) { return lerp_reference(v[0], v[1], 0.3); });
  check_values(half, rounded, 1.0 / 512);
}

TEST_CASE("lerp's gradients are (1 - weight), weight and (end - start) by finite differences") {
  gradcheck_leaves([](const std::vector<Tensor>& x) { return lerp(x[0], x[1], x[2]); },
            {leaf({2, 3}, 21), leaf({3}, 22), leaf({2, 1}, 23)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return lerp(x[0].t(), x[1], 0.7); },
                   {leaf({3, 2}, 24), leaf({3}, 25)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return lerp(x[0], x[1], -0.2); }, {leaf({4}, 26), leaf({4}, 27)});
}

TEST_CASE("lerp refuses mixed dtypes and integers, naming the call site") {
  const Tensor a = doubles({1.0, 2.0});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { lerp(a, a.to(kFloat32), 0.5); });
  CHECK(message.find("lerp: expected dtype float64 for `end` but got dtype float32") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { lerp(a, a, a.to(kFloat32)); });
  CHECK(message.find("lerp: expected dtype float64 for `weight` but got dtype float32") != std::string::npos);
  // A 0-d weight of another dtype is taken in start's dtype, as recent PyTorch promotes it.
  const Tensor promoted =
      lerp(a.to(kFloat32), doubles({3.0, 6.0}).to(kFloat32), scalar_tensor(0.25, {.dtype = kFloat64}));
  CHECK(promoted.dtype() == kFloat32);
  check_values(promoted, {1.5, 3.0});
  const Tensor integers = a.to(kInt64);
  message = error_of([&] { lerp(integers, integers, 0.5); });
  CHECK(message.find("lerp: expected floating-point tensors, got int64") != std::string::npos);
}

// ---- addcmul, addcdiv ----

TEST_CASE("addcmul and addcdiv compute a + (value t1) op t2 with broadcasting, exactly in float64") {
  const Tensor a = doubles({1.0, -2.0, kNaN, 0.5, -0.0, 3.0}, {2, 3});
  const Tensor t1 = small_tensor({3}, 31);
  const Tensor t2 = doubles({0.75, -0.0}, {2, 1});
  for (double value : {1.0, 0.5, -3.0}) {
    INFO("value " << value);
    const std::vector<ShapedValues> operands{operand_of(a), operand_of(t1), operand_of(t2)};
    check_values(addcmul(a, t1, t2, value),
                 pointwise_reference(operands, [&](const auto& v) { return v[0] + value * v[1] * v[2]; }));
    // A -0.0 divisor gives signed infinities, as IEEE division does.
    check_values(addcdiv(a, t1, t2, value),
                 pointwise_reference(operands, [&](const auto& v) { return v[0] + value * v[1] / v[2]; }));
  }
  const Tensor strided = small_tensor({3, 2}, 32).t();
  check_values(addcmul(strided, strided, strided),
               pointwise_reference({operand_of(strided)}, [](const auto& v) { return v[0] + v[0] * v[0]; }));
}

TEST_CASE("addcmul keeps integer dtypes, and both follow PyTorch's result type of three inputs") {
  const Tensor a = from_vector<int64_t>({1, -2, 3}, {3});
  const Tensor t1 = from_vector<int64_t>({4, 5, -6}, {3});
  const Tensor t2 = from_vector<int32_t>({7, 8, 9}, {3});
  const Tensor product = addcmul(a, t1, t2, 3.0);
  CHECK(product.dtype() == kInt64);
  CHECK(product.to_vector<int64_t>() == std::vector<int64_t>{1 + 3 * 4 * 7, -2 + 3 * 5 * 8, 3 - 3 * 6 * 9});
  // int32[3] with float32 and float64 0-d tensors: the 0-d group (float64) outranks the integers.
  const Tensor single = scalar_tensor(2.0, {.dtype = kFloat32});
  const Tensor wide = scalar_tensor(4.0, {.dtype = kFloat64});
  const Tensor mixed = addcdiv(t2, single, wide);
  CHECK(mixed.dtype() == kFloat64);
  check_values(mixed, {7.5, 8.5, 9.5});
  // A floating tensor with dims keeps its dtype beside a float64 0-d tensor.
  CHECK(addcmul(t1.to(kFloat32), wide, wide).dtype() == kFloat32);
  CHECK(addcdiv(a, t1.to(kFloat32), t2).dtype() == kFloat32);
}

TEST_CASE("addcmul's and addcdiv's gradients by finite differences") {
  gradcheck_leaves([](const std::vector<Tensor>& x) { return addcmul(x[0], x[1], x[2], -1.5); },
            {leaf({2, 3}, 33), leaf({3}, 34), leaf({2, 1}, 35)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return addcdiv(x[0], x[1], x[2], 0.5); },
            {leaf({2, 3}, 36), leaf({2, 3}, 37), leaf({3}, 38)});
}

TEST_CASE("addcdiv refuses integer division, addcmul bool and fractional values for integer results") {
  const Tensor integers = from_vector<int64_t>({1, 2}, {2});
  std::string message = error_of([&] { addcdiv(integers.to(kFloat32), integers, integers.to(kBool)); });
  CHECK(message.find("addcdiv: integer division with addcdiv is not supported (tensor1 int64, tensor2 bool)") !=
        std::string::npos);
  message = error_of([&] { addcmul(integers, integers, integers, 0.5); });
  CHECK(message.find("addcmul: value 0.5 is not an integer, but the result is int64") != std::string::npos);
  const Tensor flags = integers.to(kBool);
  message = error_of([&] { addcmul(flags, flags, flags); });
  CHECK(message.find("addcmul: bool tensors are not supported") != std::string::npos);
}

// ---- isclose, allclose ----

namespace {

// PyTorch's isclose (ATen's TensorCompare.cpp), element by element.
bool isclose_reference(double a, double b, double rtol, double atol, bool equal_nan) {
  if (a == b) return true;
  if (equal_nan && std::isnan(a) && std::isnan(b)) return true;
  if (rtol == 0.0 && atol == 0.0) return false;
  const double actual = std::abs(a - b);
  return std::isfinite(actual) && actual <= atol + std::abs(rtol * b);
}

}  // namespace

TEST_CASE("isclose follows PyTorch's rule: |a - b| <= atol + rtol |b|, finite, NaN only with equal_nan") {
  const Tensor a = doubles({1.0, 1.0, kInf, kInf, kInf, 1.0, kNaN, 0.0, 1.0, 1.0, -0.0, 100.0}, {2, 6});
  const Tensor b = doubles({1.000001, 1.1, kInf, -kInf, 1.0, kInf, kNaN, 1e-9, 1.11, 0.89, 0.0, 100.0009}, {2, 6});
  for (double rtol : {1e-5, 0.1, 0.0}) {
    for (double atol : {1e-8, 0.0, 0.5}) {
      for (bool equal_nan : {false, true}) {
        INFO("rtol " << rtol << " atol " << atol << " equal_nan " << equal_nan);
        const std::vector<ShapedValues> operands{operand_of(a), operand_of(b)};
        const Tensor result = isclose(a, b, rtol, atol, equal_nan);
        CHECK(result.dtype() == kBool);
        check_values(result, pointwise_reference(operands, [&](const auto& v) {
                       return isclose_reference(v[0], v[1], rtol, atol, equal_nan) ? 1.0 : 0.0;
                     }));
        // Not symmetric: the tolerance scales with |b| (1 vs 1.11 is close, 1.11 vs 1 is not, at rtol 0.1).
        check_values(isclose(b, a, rtol, atol, equal_nan),
                     pointwise_reference({operand_of(b), operand_of(a)}, [&](const auto& v) {
                       return isclose_reference(v[0], v[1], rtol, atol, equal_nan) ? 1.0 : 0.0;
                     }));
      }
    }
  }
  CHECK(values_of(isclose(doubles({1.0}), doubles({1.11}), 0.1, 0.0))[0] == 1.0);
  CHECK(values_of(isclose(doubles({1.11}), doubles({1.0}), 0.1, 0.0))[0] == 0.0);
}

TEST_CASE("isclose broadcasts, reads strided inputs, and compares integers and bools in float32") {
  const Tensor base = small_tensor({3, 2}, 41);
  const Tensor strided = base.t();
  const Tensor row = doubles({values_of(strided)[0], 5.0, values_of(strided)[2] + 1e-7});
  check_values(isclose(strided, row), pointwise_reference({operand_of(strided), operand_of(row)}, [](const auto& v) {
                 return isclose_reference(v[0], v[1], 1e-5, 1e-8, false) ? 1.0 : 0.0;
               }));
  CHECK(isclose(doubles({}, {0, 2}), doubles({1.0, 2.0})).sizes() == Dims{0, 2});
  // 2^40 and 2^40 + 1 are one float32 value apart by far less than rtol; differences in float32.
  const Tensor large = from_vector<int64_t>({1, 100, int64_t{1} << 40, -7}, {4});
  const Tensor near = from_vector<int64_t>({2, 101, (int64_t{1} << 40) + 1, 7}, {4});
  check_values(isclose(large, near, 0.01, 0.0), {0.0, 1.0, 1.0, 0.0});
  check_values(isclose(large, near, 0.0, 1.0), {1.0, 1.0, 1.0, 0.0});
  check_values(isclose(large, near, 0.0, 0.0), {0.0, 0.0, 0.0, 0.0});
  const Tensor flags = from_vector<bool>({true, false, true}, {3});
  const Tensor others = from_vector<bool>({true, true, false}, {3});
  check_values(isclose(flags, others), {1.0, 0.0, 0.0});
  check_values(isclose(flags, others, 0.0, 1.0), {1.0, 1.0, 1.0});
}

TEST_CASE("allclose is isclose over every element, and both refuse PyTorch's bad arguments") {
  const Tensor a = doubles({1.0, kNaN, 3.0});
  const Tensor b = doubles({1.0 + 1e-9, kNaN, 3.0});
  CHECK_FALSE(allclose(a, b));
  CHECK(allclose(a, b, 1e-5, 1e-8, true));
  CHECK_FALSE(allclose(a, doubles({1.0, kNaN, 3.1}), 1e-5, 1e-8, true));
  CHECK(allclose(doubles({}, {0}), doubles({}, {0})));
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { isclose(a, a.to(kFloat32)); });
  CHECK(message.find("isclose: float64 did not match float32") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { allclose(a, a, -1.0); });
  CHECK(message.find("isclose: rtol must be greater than or equal to zero, but got -1") != std::string::npos);
  message = error_of([&] { isclose(a, a, 1e-5, -0.5); });
  CHECK(message.find("isclose: atol must be greater than or equal to zero, but got -0.5") != std::string::npos);
}

// ---- nan_to_num ----

TEST_CASE("nan_to_num replaces NaN and infinities, by default with the dtype's finite extremes") {
  const std::vector<double> input{kNaN, kInf, -kInf, 1.5, -0.0, -2.0};
  struct Case {
    DType dtype;
    double largest;
  };
  for (const Case& c :
       {Case{kFloat64, std::numeric_limits<double>::max()}, Case{kFloat32, std::numeric_limits<float>::max()},
        Case{kFloat16, 65504.0}, Case{kBFloat16, 3.3895313892515355e38}}) {
    INFO(dtype_name(c.dtype));
    const Tensor a = floats(input, {2, 3}, c.dtype);
    const Tensor result = nan_to_num(a);
    CHECK(result.dtype() == c.dtype);
    check_values(result, {0.0, c.largest, -c.largest, 1.5, -0.0, -2.0});
    check_values(nan_to_num(a, -1.0, 7.0, -8.0), {-1.0, 7.0, -8.0, 1.5, -0.0, -2.0});
  }
  // A replacement past the dtype's range becomes inf there, as PyTorch's static_cast.
  check_values(nan_to_num(floats(input, {6}, kFloat32), 0.0, 1e300),
               {0.0, kInf, -std::numeric_limits<float>::max(), 1.5, -0.0, -2.0});
  const Tensor strided = floats(input, {3, 2}, kFloat64).t();
  check_values(nan_to_num(strided, 9.0), pointwise_reference({operand_of(strided)}, [](const auto& v) {
                 const double x = v[0];
                 return std::isnan(x) ? 9.0
                        : x == kInf   ? std::numeric_limits<double>::max()
                        : x == -kInf  ? -std::numeric_limits<double>::max()
                                      : x;
               }));
  CHECK(nan_to_num(doubles({}, {0, 4})).sizes() == Dims{0, 4});
}

TEST_CASE("nan_to_num copies integer and bool inputs, and nan_to_num_ works in place") {
  const Tensor integers = from_vector<int64_t>({3, -4}, {2});
  const Tensor copy = nan_to_num(integers, 1.0, 2.0, 3.0);
  CHECK(copy.dtype() == kInt64);
  CHECK_FALSE(copy.is_same(integers));
  CHECK(copy.to_vector<int64_t>() == std::vector<int64_t>{3, -4});
  CHECK(nan_to_num(from_vector<bool>({true, false}, {2})).to_vector<bool>() == std::vector<bool>{true, false});
  Tensor target = doubles({kNaN, kInf, 2.0});
  Tensor& returned = nan_to_num_(target, 5.0, 6.0);
  CHECK(&returned == &target);
  check_values(target, {5.0, 6.0, 2.0});
}

TEST_CASE("nan_to_num's gradient is 1 at kept elements and 0 at replaced ones") {
  const Tensor a = doubles({kNaN, 1.5, kInf, -kInf, -0.5}).requires_grad_();
  nan_to_num(a).backward(doubles({2.0, 3.0, 4.0, 5.0, 6.0}));
  check_values(a.grad(), {0.0, 3.0, 0.0, 0.0, 6.0}, 1e-15);
  gradcheck_leaves([](const std::vector<Tensor>& x) { return nan_to_num(x[0]); }, {leaf({2, 3}, 51)});
}

// ---- logaddexp, logaddexp2, hypot ----

namespace {

// ATen's logaddexp kernels: an infinity beside itself is itself, else m + log1p(base^-|a - b|).
double log_add_reference(double a, double b, bool base_two) {
  if (std::isinf(a) && a == b) return a;
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  const double larger = std::max(a, b);
  const double gap = -std::abs(a - b);
  return base_two ? larger + std::log1p(std::exp2(gap)) / std::numbers::ln2 : larger + std::log1p(std::exp(gap));
}

}  // namespace

TEST_CASE("logaddexp and logaddexp2 are stable for large and equal arguments, infinities and NaN") {
  const Tensor a = doubles({0.5, 1000.0, -1000.0, kInf, kInf, -kInf, -kInf, kNaN, 3.0, 2.0, -0.0, 40.0}, {2, 6});
  const Tensor b = doubles({-0.25, 999.0, -1000.0, kInf, 5.0, -kInf, 2.0, 1.0, kNaN, 2.0, 0.0, -40.0}, {2, 6});
  for (bool base_two : {false, true}) {
    INFO("base two " << base_two);
    const Tensor result = base_two ? logaddexp2(a, b) : logaddexp(a, b);
    check_values(result,
                 pointwise_reference({operand_of(a), operand_of(b)},
                                     [&](const auto& v) { return log_add_reference(v[0], v[1], base_two); }),
                 1e-15);
    const Tensor column = doubles({0.5, -2.0}, {2, 1});
    const Tensor strided = small_tensor({3, 2}, 61).t();
    check_values(base_two ? logaddexp2(strided, column) : logaddexp(strided, column),
                 pointwise_reference({operand_of(strided), operand_of(column)},
                                     [&](const auto& v) { return log_add_reference(v[0], v[1], base_two); }),
                 1e-15);
  }
  // An integer beside a float32 tensor promotes to float32; 16-bit inputs are rounded once.
  const Tensor counts = from_vector<int64_t>({1, 2}, {2});
  CHECK(logaddexp(counts, doubles({0.5, 0.5}).to(kFloat32)).dtype() == kFloat32);
  const Tensor half = logaddexp(doubles({1.0, -3.0}).to(kFloat16), doubles({1.0, 2.0}).to(kFloat16));
  CHECK(half.dtype() == kFloat16);
  check_values(half, {log_add_reference(1.0, 1.0, false), log_add_reference(-3.0, 2.0, false)}, 1.0 / 1024);
}

TEST_CASE("hypot is sqrt(a^2 + b^2) without overflow or underflow, inf beside NaN") {
  const Tensor a = doubles({3.0, -3.0, 1e300, 1e-300, kInf, kNaN, 0.0, -0.0, 5.0, kNaN, 1e200}, {11});
  const Tensor b = doubles({4.0, 4.0, 1e300, 1e-300, kNaN, -kInf, 0.0, 0.0, -12.0, 1.0, 1e-200}, {11});
  check_values(
      hypot(a, b),
      pointwise_reference({operand_of(a), operand_of(b)}, [](const auto& v) { return std::hypot(v[0], v[1]); }), 1e-15);
  const Tensor strided = small_tensor({4, 3}, 62).t();
  const Tensor row = small_tensor({4}, 63);
  check_values(
      hypot(strided, row),
      pointwise_reference({operand_of(strided), operand_of(row)}, [](const auto& v) { return std::hypot(v[0], v[1]); }),
      1e-15);
  CHECK(hypot(doubles({}, {0, 4}), row).sizes() == Dims{0, 4});
  check_values(hypot(floats({3.0, 1e30}, {2}, kFloat32), floats({4.0, 1e30}, {2}, kFloat32)),
               {5.0, std::hypot(double(1e30f), double(1e30f))}, 1e-7);
}

TEST_CASE("logaddexp, logaddexp2 and hypot gradients, ties split evenly as in PyTorch") {
  for (auto function : {+[](const Tensor&x, const Tensor&y) { return logaddexp(x, y); },
                        +[](const Tensor&x, const Tensor&y) { return logaddexp2(x, y); },
                        +[](const Tensor&x, const Tensor&y) { return hypot(x, y); }}) {
    gradcheck_leaves([&](const std::vector<Tensor>& x) { return function(x[0], x[1].t()); },
              {leaf({2, 3}, 64), leaf({3, 2}, 65)});
    gradcheck_leaves([&](const std::vector<Tensor>& x) { return function(x[0], x[1]); },
                     {leaf({2, 3}, 66), leaf({3}, 67)});
  }
  // At a = b each side gets half: 1 / (1 + e^0) (and 1 / (1 + 2^0)).
  for (bool base_two : {false, true}) {
    const Tensor x = leaf_of({0.3, -2.0});
    const Tensor y = leaf_of({0.3, -2.0});
    (base_two ? logaddexp2(x, y) : logaddexp(x, y)).sum().backward();
    check_values(x.grad(), {0.5, 0.5}, 1e-15);
    check_values(y.grad(), {0.5, 0.5}, 1e-15);
  }
  // |a| = |b|: a / hypot and b / hypot, each its own sign.
  const Tensor x = leaf_of({0.6, -2.0});
  const Tensor y = leaf_of({-0.6, -2.0});
  hypot(x, y).sum().backward();
  check_values(x.grad(), {0.6 / std::hypot(0.6, 0.6), -2.0 / std::hypot(2.0, 2.0)}, 1e-15);
  check_values(y.grad(), {-0.6 / std::hypot(0.6, 0.6), -2.0 / std::hypot(2.0, 2.0)}, 1e-15);
  // A large finite gap: the gradient is 1 to the larger side and e^-1000 (0) to the other, no NaN.
  const Tensor big = leaf_of({1000.0});
  const Tensor small = leaf_of({0.0});
  logaddexp(big, small).backward();
  check_values(big.grad(), {1.0}, 1e-15);
  check_values(small.grad(), {0.0}, 1e-15);
}

TEST_CASE("logaddexp, logaddexp2 and hypot refuse an integer result type") {
  const Tensor integers = from_vector<int64_t>({1, 2}, {2});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { logaddexp(integers, integers); });
  CHECK(message.find("logaddexp: expected a floating-point input, got int64 and int64") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { logaddexp2(integers, integers.to(kBool)); });
  CHECK(message.find("logaddexp2: expected a floating-point input, got int64 and bool") != std::string::npos);
  message = error_of([&] { hypot(integers.to(kInt32), integers); });
  CHECK(message.find("hypot: expected a floating-point input, got int32 and int64") != std::string::npos);
}

// ---- nansum, nanmean, var_mean, std_mean, aminmax ----

}  // namespace test_math_more
