// The math composites of runtime/functional_math_more.h against float64 references written here as
// plain loops (PyTorch's formulas, read from ATen): lerp, addcmul, addcdiv, isclose, allclose,
// nan_to_num, logaddexp(2), hypot, nansum, nanmean, var_mean, std_mean, aminmax, median, nanmedian,
// quantile and nanquantile. NaN, infinities and -0.0, broadcasting, non-contiguous and empty
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
#include "host_read_recorder.h"

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A tensor's shape and its values in row-major order: an operand of a reference loop.
struct ShapedValues {
  Dims sizes;
  std::vector<double> values;
};
ShapedValues operand_of(const Tensor& tensor) { return {tensor.sizes(), values_of(tensor)}; }

Dims broadcast_of(const std::vector<ShapedValues>& operands) {
  int rank = 0;
  for (const ShapedValues& operand : operands) rank = std::max(rank, operand.sizes.size());
  Dims sizes = Dims::filled(rank, 1);
  for (const ShapedValues& operand : operands)
    for (int i = 0; i < operand.sizes.size(); ++i) {
      int64_t& merged = sizes[rank - operand.sizes.size() + i];
      if (merged == 1) merged = operand.sizes[i];
    }
  return sizes;
}

// fn(values of every operand at one broadcast position), for every position in row-major order.
std::vector<double> pointwise_reference(const std::vector<ShapedValues>& operands,
                                        const std::function<double(const std::vector<double>&)>& fn) {
  const Dims sizes = broadcast_of(operands);
  std::vector<double> result;
  for (int64_t flat = 0; flat < sizes.product(); ++flat) {
    std::vector<int64_t> index(sizes.size());
    for (int64_t rest = flat, d = sizes.size() - 1; d >= 0; --d) {
      index[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    std::vector<double> arguments;
    for (const ShapedValues& operand : operands) {
      int64_t offset = 0;
      const int shift = sizes.size() - operand.sizes.size();
      for (int d = 0; d < operand.sizes.size(); ++d)
        offset = offset * operand.sizes[d] + (operand.sizes[d] == 1 ? 0 : index[d + shift]);
      arguments.push_back(operand.values[offset]);
    }
    result.push_back(fn(arguments));
  }
  return result;
}

// Equal values (NaN to NaN, a zero's sign included) when tolerance is 0, else within
// tolerance * max(1, |expected|); infinities must match exactly.
void check_values(const Tensor& actual, const std::vector<double>& expected, double tolerance = 0.0) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i << ": got " << values[i] << ", expected " << expected[i]);
    if (std::isnan(expected[i]) || std::isinf(expected[i]) || tolerance == 0.0) {
      const bool same = (std::isnan(values[i]) && std::isnan(expected[i])) ||
                        (values[i] == expected[i] && std::signbit(values[i]) == std::signbit(expected[i]));
      CHECK(same);
    } else {
      CHECK(std::abs(values[i] - expected[i]) <= tolerance * std::max(1.0, std::abs(expected[i])));
    }
  }
}

Tensor floats(const std::vector<double>& values, const Dims& sizes, DType dtype) {
  return from_vector<double>(values, sizes, dtype_options(kFloat64)).to(dtype);
}

// PyTorch's lerp (ATen's Lerp.h): the form from `end` is exact at weight 1.
double lerp_reference(double start, double end, double weight) {
  return std::abs(weight) < 0.5 ? start + weight * (end - start) : end - (end - start) * (1.0 - weight);
}

}  // namespace

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
  const Tensor start = random_tensor({3, 1, 2}, 11).transpose(0, 2);  // [2, 1, 3], not contiguous
  const Tensor end = random_tensor({4, 1}, 12);
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
  const Tensor start = random_tensor({5}, 13);
  const Tensor end = random_tensor({5}, 14);
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
  gradcheck([](const std::vector<Tensor>& x) { return lerp(x[0], x[1], x[2]); },
            {leaf({2, 3}, 21), leaf({3}, 22), leaf({2, 1}, 23)});
  gradcheck([](const std::vector<Tensor>& x) { return lerp(x[0].t(), x[1], 0.7); }, {leaf({3, 2}, 24), leaf({3}, 25)});
  gradcheck([](const std::vector<Tensor>& x) { return lerp(x[0], x[1], -0.2); }, {leaf({4}, 26), leaf({4}, 27)});
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
  const Tensor t1 = random_tensor({3}, 31);
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
  const Tensor strided = random_tensor({3, 2}, 32).t();
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
  gradcheck([](const std::vector<Tensor>& x) { return addcmul(x[0], x[1], x[2], -1.5); },
            {leaf({2, 3}, 33), leaf({3}, 34), leaf({2, 1}, 35)});
  gradcheck([](const std::vector<Tensor>& x) { return addcdiv(x[0], x[1], x[2], 0.5); },
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
  const Tensor base = random_tensor({3, 2}, 41);
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
  gradcheck([](const std::vector<Tensor>& x) { return nan_to_num(x[0]); }, {leaf({2, 3}, 51)});
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
    const Tensor strided = random_tensor({3, 2}, 61).t();
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
  const Tensor strided = random_tensor({4, 3}, 62).t();
  const Tensor row = random_tensor({4}, 63);
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
    gradcheck([&](const std::vector<Tensor>& x) { return function(x[0], x[1].t()); },
              {leaf({2, 3}, 64), leaf({3, 2}, 65)});
    gradcheck([&](const std::vector<Tensor>& x) { return function(x[0], x[1]); }, {leaf({2, 3}, 66), leaf({3}, 67)});
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

namespace {

// A reduction of a row-major [rows, columns] matrix over dim 0 (per column), dim 1 (per row) or
// both (-1), by `fn` over the reduced values.
std::vector<double> reduce_reference(const std::vector<double>& values, int64_t rows, int64_t columns, int dim,
                                     const std::function<double(const std::vector<double>&)>& fn) {
  std::vector<double> result;
  if (dim < 0) return {fn(values)};
  const int64_t outer = dim == 0 ? columns : rows;
  const int64_t inner = dim == 0 ? rows : columns;
  for (int64_t o = 0; o < outer; ++o) {
    std::vector<double> group;
    for (int64_t i = 0; i < inner; ++i) group.push_back(dim == 0 ? values[i * columns + o] : values[o * columns + i]);
    result.push_back(fn(group));
  }
  return result;
}

double nansum_of(const std::vector<double>& values) {
  double total = 0.0;
  for (double v : values) total += std::isnan(v) ? 0.0 : v;
  return total;
}
double nanmean_of(const std::vector<double>& values) {
  double count = 0.0;
  for (double v : values) count += std::isnan(v) ? 0.0 : 1.0;
  return nansum_of(values) / count;
}
double mean_of(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}
double var_of(const std::vector<double>& values, int64_t correction) {
  const double center = mean_of(values);
  double squares = 0.0;
  for (double v : values) squares += (v - center) * (v - center);
  return squares / std::max<double>(0.0, static_cast<double>(values.size()) - correction);
}

}  // namespace

TEST_CASE("nansum and nanmean skip NaN over every dim, keepdim, strided and empty inputs") {
  const Tensor base = doubles({1.5, kNaN, -2.0, 0.25, kNaN, kNaN, 3.0, -1.0, 4.0, kNaN, kInf, 0.5}, {4, 3});
  const Tensor input = base.t();  // [3, 4], not contiguous
  const std::vector<double> values = values_of(input);
  for (int dim : {-1, 0, 1}) {
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << " keepdim " << keepdim);
      const Dims dims = dim < 0 ? Dims{} : Dims{dim};
      const Tensor total = nansum(input, dims, keepdim);
      const Tensor average = nanmean(input, dims, keepdim);
      const Dims expected = dim < 0    ? (keepdim ? Dims{1, 1} : Dims{})
                            : dim == 0 ? (keepdim ? Dims{1, 4} : Dims{4})
                                       : (keepdim ? Dims{3, 1} : Dims{3});
      CHECK(total.sizes() == expected);
      CHECK(average.sizes() == expected);
      check_values(total, reduce_reference(values, 3, 4, dim, nansum_of), 1e-15);
      check_values(average, reduce_reference(values, 3, 4, dim, nanmean_of), 1e-15);
    }
  }
  // A row of NaN: nansum 0, nanmean NaN; an empty reduction: 0 and NaN.
  const Tensor all_nan = doubles({kNaN, kNaN, 1.0, 2.0}, {2, 2});
  check_values(nansum(all_nan, {1}), {0.0, 3.0});
  check_values(nanmean(all_nan, {1}), {kNaN, 1.5});
  check_values(nansum(doubles({}, {0, 3}), {0}), {0.0, 0.0, 0.0});
  check_values(nanmean(doubles({}, {0, 3}), {0}), {kNaN, kNaN, kNaN});
  const Tensor single = nanmean(floats({1.0, kNaN, 2.0}, {3}, kFloat32));
  CHECK(single.dtype() == kFloat32);
  check_values(single, {1.5});
}

TEST_CASE("nansum sums integers and bools to int64 like sum, nanmean refuses them") {
  const Tensor integers = from_vector<int32_t>({4, -1, 7, 2}, {2, 2});
  const Tensor total = nansum(integers, {0});
  CHECK(total.dtype() == kInt64);
  CHECK(total.to_vector<int64_t>() == std::vector<int64_t>{11, 1});
  CHECK(nansum(from_vector<bool>({true, true, false}, {3})).item<int64_t>() == 2);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { nanmean(integers); });
  CHECK(message.find("nanmean: expected a floating-point input, got int32 (shape [2, 2])") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { nansum(integers, {2}); }).find("nansum") != std::string::npos);
  CHECK(error_of([&] { nanmean(total.to(kFloat32), {0, 0}); }).find("nanmean") != std::string::npos);
}

TEST_CASE("nansum's and nanmean's gradients are 0 at NaN and by finite differences elsewhere") {
  const Tensor a = doubles({1.0, kNaN, 3.0, kNaN, 5.0, 6.0}, {2, 3}).requires_grad_();
  nansum(a, {1}).backward(doubles({2.0, 10.0}));
  check_values(a.grad(), {2.0, 0.0, 2.0, 0.0, 10.0, 10.0}, 1e-15);
  const Tensor b = doubles({1.0, kNaN, 3.0, kNaN, 5.0, 6.0}, {2, 3}).requires_grad_();
  nanmean(b, {1}).backward(doubles({2.0, 10.0}));
  check_values(b.grad(), {1.0, 0.0, 1.0, 0.0, 5.0, 5.0}, 1e-15);
  gradcheck([](const std::vector<Tensor>& x) { return nansum(x[0].t(), {1}, true); }, {leaf({3, 4}, 71)});
  gradcheck([](const std::vector<Tensor>& x) { return nanmean(x[0], {0}); }, {leaf({3, 4}, 72)});
}

TEST_CASE("var_mean and std_mean return (var, mean) and (std, mean) with var's corrections") {
  const Tensor input = random_tensor({4, 3}, 73).t();  // [3, 4]
  const std::vector<double> values = values_of(input);
  for (int64_t correction : {0, 1, 2}) {
    for (int dim : {-1, 0, 1}) {
      INFO("correction " << correction << " dim " << dim);
      const Dims dims = dim < 0 ? Dims{} : Dims{dim};
      const auto [variance, center] = var_mean(input, dims, correction, true);
      const auto [deviation, center_too] = std_mean(input, dims, correction);
      check_values(variance, reduce_reference(values, 3, 4, dim, [&](const auto& v) { return var_of(v, correction); }),
                   1e-14);
      check_values(deviation,
                   reduce_reference(values, 3, 4, dim, [&](const auto& v) { return std::sqrt(var_of(v, correction)); }),
                   1e-14);
      check_values(center, reduce_reference(values, 3, 4, dim, mean_of), 1e-15);
      check_values(center_too, reduce_reference(values, 3, 4, dim, mean_of), 1e-15);
      CHECK(variance.dim() == 2);
      CHECK(deviation.dim() == (dim < 0 ? 0 : 1));
    }
  }
  gradcheck(
      [](const std::vector<Tensor>& x) {
        const auto [variance, center] = var_mean(x[0], {1});
        return add(variance, mul(center, 3.0));
      },
      {leaf({3, 4}, 74)});
  gradcheck(
      [](const std::vector<Tensor>& x) {
        const auto [deviation, center] = std_mean(x[0], {0}, 0);
        return add(deviation, mul(center, -2.0));
      },
      {leaf({3, 4}, 75)});
  const Tensor integers = from_vector<int64_t>({1, 2}, {2});
  CHECK(error_of([&] { var_mean(integers); }).find("var_mean: expected a floating-point input, got int64") !=
        std::string::npos);
  CHECK(error_of([&] { std_mean(integers); }).find("std_mean: expected a floating-point input, got int64") !=
        std::string::npos);
  CHECK(error_of([&] { std_mean(input, {3}); }).find("std_mean") != std::string::npos);
}

TEST_CASE("aminmax returns (amin, amax) over a dim or all elements, for every dtype") {
  const Tensor input = doubles({2.0, -1.0, 7.0, -0.5, 3.0, 3.0, -4.0, 9.0, 0.25, 1.0, 8.0, -6.0}, {4, 3}).t();
  auto smallest = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto largest = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  for (DType dtype : {kFloat64, kFloat32, kInt64, kInt32}) {
    const Tensor typed = input.to(dtype);
    const std::vector<double> values = values_of(typed);  // integers truncated
    for (int dim : {-1, 0, 1}) {
      INFO(dtype_name(dtype) << " dim " << dim);
      const auto [low, high] = dim < 0 ? aminmax(typed) : aminmax(typed, dim, true);
      CHECK(low.dtype() == dtype);
      check_values(low, reduce_reference(values, 3, 4, dim, smallest));
      check_values(high, reduce_reference(values, 3, 4, dim, largest));
      CHECK(low.dim() == (dim < 0 ? 0 : 2));
    }
  }
  const auto [low, high] = aminmax(doubles({1.0, kNaN, -3.0}));
  check_values(low, {kNaN});
  check_values(high, {kNaN});
  const auto [no, yes] = aminmax(from_vector<bool>({true, false, true}, {3}));
  CHECK_FALSE(no.item<bool>());
  CHECK(yes.item<bool>());
  const auto [kept_low, kept_high] = aminmax(input, std::nullopt, true);
  CHECK(kept_low.sizes() == Dims{1, 1});
  CHECK(std::get<0>(aminmax(doubles({}, {0, 3}), 1)).sizes() == Dims{0});
  const auto [scalar_low, scalar_high] = aminmax(scalar_tensor(2.5, {.dtype = kFloat64}), -1);
  check_values(scalar_high, {2.5});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { aminmax(doubles({}, {2, 0})); });
  CHECK(message.find("aminmax: cannot compute aminmax over an empty tensor (shape [2, 0])") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { aminmax(doubles({}, {2, 0}), 1); });
  CHECK(message.find("aminmax: expected reduction dim 1 to have non-zero size (input shape [2, 0])") !=
        std::string::npos);
  CHECK(error_of([&] { aminmax(input, 2); }).find("aminmax: dim 2 is out of range") != std::string::npos);
}

// ---- median, nanmedian ----

namespace {

struct Picked {
  double value;
  int64_t index;
};

// PyTorch's CPU median kernel along a row: with a NaN (median), the first NaN; else the element at
// position (n - 1) / 2 (nanmedian: (n - nans - 1) / 2, 0 when all are NaN) of the (value, index)
// order with NaN last.
Picked median_reference(const std::vector<double>& row, bool ignore_nan) {
  const int64_t n = static_cast<int64_t>(row.size());
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isnan(row[i])) continue;
    if (!ignore_nan) return {row[i], i};
    ++nans;
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    if (std::isnan(row[i]) || std::isnan(row[j])) return !std::isnan(row[i]) && std::isnan(row[j]);
    return row[i] < row[j] || (row[i] == row[j] && i < j);
  });
  const int64_t position = ignore_nan ? std::max<int64_t>(0, (n - nans - 1) / 2) : (n - 1) / 2;
  return {row[order[position]], order[position]};
}

}  // namespace

TEST_CASE("median and nanmedian along a dim pick PyTorch's value and index, ties and NaNs included") {
  // Rows with ties, NaNs, an even count (the lower median), infinities and signed zeros.
  const Tensor base = doubles({2.0,  1.0,  2.0,  2.0,  3.0,  5.0,    //
                               kNaN, 1.0,  kNaN, 0.5,  4.0,  -1.0,   //
                               0.0,  -0.0, 0.0,  -0.0, kInf, -kInf,  //
                               kNaN, kNaN, kNaN, kNaN, kNaN, kNaN},
                              {4, 6});
  for (bool ignore_nan : {false, true}) {
    for (int64_t dim : {1, 0, -1}) {
      for (bool keepdim : {false, true}) {
        INFO("ignore_nan " << ignore_nan << " dim " << dim << " keepdim " << keepdim);
        const Tensor input = dim == 0 ? base.t() : base;  // [6, 4] strided for dim 0
        const auto [values, indices] = ignore_nan ? nanmedian(input, dim, keepdim) : median(input, dim, keepdim);
        std::vector<double> expected_values;
        std::vector<double> expected_indices;
        const std::vector<double> all = values_of(base);
        for (int64_t r = 0; r < 4; ++r) {
          const std::vector<double> row(all.begin() + r * 6, all.begin() + r * 6 + 6);
          const Picked picked = median_reference(row, ignore_nan);
          expected_values.push_back(picked.value);
          expected_indices.push_back(static_cast<double>(picked.index));
        }
        CHECK(indices.dtype() == kInt64);
        CHECK(values.sizes() == (keepdim ? (dim == 0 ? Dims{1, 4} : Dims{4, 1}) : Dims{4}));
        check_values(values, expected_values);
        check_values(indices, expected_indices);
      }
    }
  }
}

TEST_CASE("median over all elements is the lower median, NaN with any NaN, nanmedian skips them") {
  auto reference = [](std::vector<double> values, bool ignore_nan) {
    std::vector<double> kept;
    for (double v : values)
      if (!std::isnan(v)) kept.push_back(v);
    if (kept.size() != values.size() && (!ignore_nan || kept.empty())) return kNaN;
    std::stable_sort(kept.begin(), kept.end());  // of equal values (0.0, -0.0) the input order
    return kept[(kept.size() - 1) / 2];
  };
  const std::vector<std::vector<double>> cases{{4.0, 1.0, 3.0, 2.0}, {5.0, kNaN, 1.0, 3.0},         {kNaN, kNaN},
                                               {-0.0, 0.0, -0.0},    {kInf, -kInf, kInf, 1.0, 2.0}, {7.0}};
  for (const std::vector<double>& values : cases) {
    const Tensor input = doubles(values, {static_cast<int64_t>(values.size()), 1}).t();
    for (bool ignore_nan : {false, true}) {
      INFO("values " << values.size() << " ignore_nan " << ignore_nan);
      const Tensor result = ignore_nan ? nanmedian(input) : median(input);
      CHECK(result.dim() == 0);
      check_values(result, {reference(values, ignore_nan)});
    }
  }
  // Integers and bools; an empty floating input gives NaN, an empty integer one is an error.
  const Tensor integers = from_vector<int64_t>({9, -3, 4, 4, 100, 2}, {2, 3});
  CHECK(median(integers).item<int64_t>() == 4);
  CHECK(std::get<1>(median(integers, 1)).to_vector<int64_t>() == std::vector<int64_t>{2, 0});
  CHECK_FALSE(median(from_vector<bool>({true, false, false, true}, {4})).item<bool>());
  check_values(median(doubles({}, {0, 2})), {kNaN});
  check_values(nanmedian(scalar_tensor(-2.5, {.dtype = kFloat64})), {-2.5});
  const auto [value, index] = median(scalar_tensor(1.5, {.dtype = kFloat32}), 0);
  check_values(value, {1.5});
  CHECK(index.item<int64_t>() == 0);
  CHECK(std::get<0>(median(doubles({}, {0, 3}), 1)).sizes() == Dims{0});
}

TEST_CASE("median's gradient: shared by every tie over all elements, to the picked index along a dim") {
  const Tensor a = leaf_of({1.0, 3.0, 3.0, 5.0, 3.0, 0.5});
  median(a).backward(scalar_tensor(6.0, {.dtype = kFloat64}));
  check_values(a.grad(), {0.0, 2.0, 2.0, 0.0, 2.0, 0.0}, 1e-15);
  const Tensor b = leaf_of({kNaN, 2.0, kNaN});
  median(b).backward();
  check_values(b.grad(), {0.5, 0.0, 0.5}, 1e-15);
  const Tensor c = leaf_of({kNaN, 2.0, -kInf, 4.0});
  nanmedian(c).backward();
  check_values(c.grad(), {0.0, 1.0, 0.0, 0.0}, 1e-15);
  const Tensor d = leaf_of({kInf, kInf, 1.0, kInf});
  const Tensor infinite = median(d);
  check_values(infinite, {kInf});
  infinite.backward();
  check_values(d.grad(), {1.0 / 3, 1.0 / 3, 0.0, 1.0 / 3}, 1e-15);
  // Along a dim the picked element (index 2, the middle of the three 2s) gets it all.
  const Tensor e = doubles({2.0, 1.0, 2.0, 2.0, 3.0, 5.0}, {1, 6}).requires_grad_();
  std::get<0>(median(e, 1)).backward(doubles({4.0}));
  check_values(e.grad(), {0.0, 0.0, 4.0, 0.0, 0.0, 0.0}, 1e-15);
  gradcheck([](const std::vector<Tensor>& x) { return std::get<0>(nanmedian(x[0].t(), 0, true)); }, {leaf({4, 5}, 81)});
  gradcheck([](const std::vector<Tensor>& x) { return median(x[0]); }, {leaf({3, 5}, 82)});
}

TEST_CASE("median and nanmedian refuse bool along a dim, empty dims and empty integer inputs") {
  const Tensor flags = from_vector<bool>({true, false}, {2});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { median(flags, 0); });
  CHECK(message.find("median: bool tensors are not supported along a dim (input shape [2])") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { nanmedian(doubles({}, {3, 0}), 1); });
  CHECK(message.find("nanmedian: expected reduction dim 1 to have non-zero size (input shape [3, 0])") !=
        std::string::npos);
  message = error_of([&] { median(from_vector<int64_t>({}, {0})); });
  CHECK(message.find("median: an empty int64 tensor (shape [0]) has no median") != std::string::npos);
  CHECK(error_of([&] { median(flags.to(kFloat32), 1); }).find("median: dim 1 is out of range") != std::string::npos);
}

// ---- quantile, nanquantile ----

namespace {

// PyTorch's quantile_compute on one row: rank q (n - 1) among the sorted values (any NaN: the last
// rank, a NaN; nanquantile: among the non-NaN values, rank 0 when there are none), then the
// interpolation.
double quantile_reference(std::vector<double> row, double q, QuantileInterpolation interpolation, bool ignore_nan) {
  std::vector<double> kept;
  for (double v : row)
    if (!std::isnan(v)) kept.push_back(v);
  if (kept.size() != row.size() && (!ignore_nan || kept.empty())) return kNaN;
  std::sort(kept.begin(), kept.end());
  const double rank = q * static_cast<double>(kept.size() - 1);
  const double below = kept[static_cast<size_t>(std::floor(rank))];
  const double above = kept[static_cast<size_t>(std::ceil(rank))];
  switch (interpolation) {
    case QuantileInterpolation::Lower:
      return below;
    case QuantileInterpolation::Higher:
      return above;
    case QuantileInterpolation::Nearest:
      return kept[static_cast<size_t>(std::nearbyint(rank))];
    case QuantileInterpolation::Midpoint:
      return lerp_reference(below, above, 0.5);
    case QuantileInterpolation::Linear:
      return lerp_reference(below, above, rank - std::floor(rank));
  }
  return kNaN;
}

}  // namespace

TEST_CASE("quantile and nanquantile follow PyTorch's ranks and interpolations, q scalar or 1-D") {
  const Tensor base = doubles({3.0,  1.0,  4.0,  1.5,  9.0,   //
                               2.0,  kNaN, 6.0,  5.0,  3.0,   //
                               kNaN, kNaN, kNaN, kNaN, kNaN,  //
                               -1.0, 8.0,  -1.0, 0.5,  7.0},
                              {4, 5});
  const std::vector<double> all = values_of(base);
  const std::vector<double> qs{0.0, 0.25, 0.375, 0.5, 0.625, 0.9, 1.0};
  for (bool ignore_nan : {false, true}) {
    for (auto interpolation :
         {QuantileInterpolation::Linear, QuantileInterpolation::Lower, QuantileInterpolation::Higher,
          QuantileInterpolation::Midpoint, QuantileInterpolation::Nearest}) {
      INFO("ignore_nan " << ignore_nan << " interpolation " << static_cast<int>(interpolation));
      const auto run = [&](const Tensor& input, const auto& q, std::optional<int64_t> dim, bool keepdim) {
        return ignore_nan ? nanquantile(input, q, dim, keepdim, interpolation)
                          : quantile(input, q, dim, keepdim, interpolation);
      };
      // Along dim 1 (and dim 0 of the transpose), q as a 1-D tensor: [Q, 4].
      std::vector<double> expected;
      for (double q : qs)
        for (int64_t r = 0; r < 4; ++r)
          expected.push_back(
              quantile_reference({all.begin() + r * 5, all.begin() + r * 5 + 5}, q, interpolation, ignore_nan));
      const Tensor q_tensor = doubles(qs);
      const Tensor rows = run(base, q_tensor, 1, false);
      CHECK(rows.sizes() == Dims{7, 4});
      check_values(rows, expected, 1e-15);
      const Tensor columns = run(base.t(), q_tensor, 0, true);
      CHECK(columns.sizes() == Dims{7, 1, 4});
      check_values(columns, expected, 1e-15);
      // Over all elements with a scalar q.
      const Tensor finite_rows = base.slice(0, 0, 2);
      const std::vector<double> finite(all.begin(), all.begin() + 10);
      const Tensor whole = run(finite_rows, 0.3, std::nullopt, false);
      CHECK(whole.dim() == 0);
      check_values(whole, {quantile_reference(finite, 0.3, interpolation, ignore_nan)}, 1e-15);
      CHECK(run(finite_rows, 0.3, std::nullopt, true).sizes() == Dims{1, 1});
    }
  }
  // float32 computes in float32; a 0-d input reduces to itself.
  const Tensor single = quantile(doubles({1.0, 2.0, 4.0}).to(kFloat32), 0.75);
  CHECK(single.dtype() == kFloat32);
  check_values(single, {3.0});
  check_values(quantile(scalar_tensor(2.5, {.dtype = kFloat64}), 0.5, 0), {2.5});
}

TEST_CASE("quantile's gradient reaches the two neighbouring ranks, by finite differences") {
  gradcheck(
      [](const std::vector<Tensor>& x) {
        return quantile(x[0], doubles({0.2, 0.5, 0.95}), 1);
      },
      {leaf({3, 6}, 91)});
  gradcheck([](const std::vector<Tensor>& x) { return nanquantile(x[0].t(), 0.4, 0, true); }, {leaf({4, 3}, 92)});
  const Tensor a = leaf_of({4.0, 1.0, 2.0, 3.0});
  quantile(a, 0.5).backward();  // rank 1.5: halfway between 2 and 3
  check_values(a.grad(), {0.0, 0.0, 0.5, 0.5}, 1e-15);
}

TEST_CASE("quantile with a double q checks it on the host and reads no tensor, a tensor q is read on the CPU") {
  const Tensor a = from_vector<double>({4.0, 1.0, 2.0, 3.0});
  HostReadRecorder recorder;
  {
    DispatchModeGuard guard(recorder);
    quantile(a, 0.5);
    nanquantile(a, 0.25);
  }
  CHECK(recorder.reads.empty());
  {
    DispatchModeGuard guard(recorder);
    quantile(a, from_vector<double>({0.5}));  // PyTorch's CPU range check reads q
  }
  CHECK(recorder.reads.size() == 1);
}

TEST_CASE("quantile refuses PyTorch's bad arguments") {
  const Tensor input = doubles({1.0, 2.0, 3.0});
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { quantile(input, 1.5); });
  CHECK(message.find("quantile: q must be in the range [0, 1] but got 1.5") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([&] { nanquantile(input, doubles({0.5, -0.1})); });
  CHECK(message.find("nanquantile: q values must be in the range [0, 1] (q of shape [2])") != std::string::npos);
  message = error_of([&] { quantile(input, doubles({0.5, 0.1}, {1, 2})); });
  CHECK(message.find("quantile: q must be a scalar or 1-D tensor, got shape [1, 2]") != std::string::npos);
  message = error_of([&] { quantile(input, doubles({0.5}).to(kFloat32)); });
  CHECK(message.find("quantile: the q tensor must have the input's dtype float64, got float32") != std::string::npos);
  message = error_of([&] { quantile(input.to(kInt64), 0.5); });
  CHECK(message.find("quantile: the input tensor must be either float32 or float64, got int64") != std::string::npos);
  message = error_of([&] { quantile(doubles({}, {0}), 0.5); });
  CHECK(message.find("quantile: the input tensor must be non-empty (shape [0])") != std::string::npos);
  CHECK(error_of([&] { quantile(input, 0.5, 1); }).find("quantile: dim 1 is out of range") != std::string::npos);
}
