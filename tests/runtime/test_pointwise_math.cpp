// The less common elementwise math through the registry: the edges of each function's domain in
// every float dtype, integer inputs, fmod's and remainder's signs and integer semantics, their
// errors, the host-scalar forms, and gradients against closed forms (random values and finite
// differences are the conformance suite's, tests/conformance/cases_math.cpp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

#include "pointwise_test_util.h"

namespace test_pointwise_math {

using namespace pointwise_test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("inverse and hyperbolic trigonometry: NaN outside the domain, infinities at atanh's poles") {
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    INFO(dtype_name(dtype));
    const Tensor x = tensor_from({-2.0, -1.0, -0.0, 0.5, 1.0, 2.0}, {6}, dtype);
    const std::vector<double> asin_x = values_of(ember::asin(x));
    const std::vector<double> acos_x = values_of(ember::acos(x));
    const std::vector<double> atanh_x = values_of(ember::atanh(x));
    const std::vector<double> acosh_x = values_of(ember::acosh(x));
    CHECK(std::isnan(asin_x[0]));
    CHECK(std::isnan(acos_x[5]));
    CHECK(asin_x[2] == 0.0);
    CHECK(std::signbit(asin_x[2]));  // odd functions keep -0.0, as C's do
    CHECK(acos_x[4] == 0.0);
    CHECK(atanh_x[1] == -kInf);
    CHECK(atanh_x[4] == kInf);
    CHECK(std::isnan(atanh_x[5]));
    CHECK(acosh_x[4] == 0.0);
    CHECK(std::isnan(acosh_x[3]));
    const Tolerance tolerance = tolerance_for(dtype);
    check_close({asin_x[3], acos_x[3]}, {std::asin(0.5), std::acos(0.5)}, tolerance, "asin, acos");
    check_close({values_of(ember::atan(x))[5], values_of(ember::asinh(x))[0], acosh_x[5]},
                {std::atan(2.0), std::asinh(-2.0), std::acosh(2.0)}, tolerance, "atan, asinh, acosh");
    // Against the double function of each stored input (bf16 and fp16 store -2.0 ... 2.0 exactly).
    const auto expected = [](double (*f)(double)) {
      return std::vector<double>{f(-2.0), f(-1.0), f(0.0), f(0.5), f(1.0), f(2.0)};
    };
    check_close(values_of(ember::tan(x)), expected([](double v) { return std::tan(v); }), tolerance, "tan");
    check_close(values_of(ember::sinh(x)), expected([](double v) { return std::sinh(v); }), tolerance, "sinh");
    check_close(values_of(ember::cosh(x)), expected([](double v) { return std::cosh(v); }), tolerance, "cosh");
  }
  // Integers become float32, as torch's.
  const Tensor integers = from_vector<int64_t>({0, 1});
  for (const Tensor& result :
       {ember::tan(integers), ember::asin(integers), ember::acosh(integers), ember::atanh(integers)})
    CHECK(result.dtype() == kFloat32);
  CHECK(values_of(ember::acos(from_vector<int32_t>({1})))[0] == 0.0);
}

TEST_CASE("log2, log10 and exp2 on powers of their base and the domain's ends, and erfc keeps erf's lost tail") {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    INFO(dtype_name(dtype));
    // Within a few units of the last place, not exact: CUDA's log2, log10 and exp2 promise that.
    const Tolerance tolerance = tolerance_for(dtype);
    const Tensor x = tensor_from({8.0, 0.25, 0.0, -1.0}, {4}, dtype);
    check_close(values_of(ember::log2(x)), {3.0, -2.0, -kInf, kNaN}, tolerance, "log2");
    check_close(values_of(ember::log10(tensor_from({1000.0, 1.0, 0.0}, {3}, dtype))), {3.0, 0.0, -kInf}, tolerance,
                "log10");
    check_close(values_of(ember::exp2(tensor_from({10.0, -3.0, -kInf}, {3}, dtype))), {1024.0, 0.125, 0.0},
                tolerance, "exp2");
    check_close(values_of(ember::erfc(tensor_from({-kInf, 0.0, kInf}, {3}, dtype))), {2.0, 1.0, 0.0}, tolerance,
                "erfc");
  }
  // 1 - erf(10) is 0 in every dtype; erfc(10) is 2.09e-45, which float64 holds.
  const double far_tail = values_of(ember::erfc(tensor_from({10.0}, {1})))[0];
  CHECK(far_tail == doctest::Approx(2.088487583762544757e-45).epsilon(1e-13));
  CHECK(ember::log2(from_vector<int32_t>({4})).dtype() == kFloat32);
  CHECK(values_of(ember::log10(from_vector<int64_t>({100})))[0] == doctest::Approx(2.0).epsilon(1e-6));
}

TEST_CASE("atan2 is the angle of (b, a) in every quadrant, with C's signed zeros") {
  const double pi = std::numbers::pi;
  const Tensor a = tensor_from({1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, 2.0}, {8});
  const Tensor b = tensor_from({1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 0.0, 0.0}, {8});
  const std::vector<double> angle = values_of(ember::atan2(a, b));
  check_close(angle, {pi / 4, 3 * pi / 4, -3 * pi / 4, -pi / 4, pi, -pi, 0.0, pi / 2}, tolerance_for(kFloat64),
              "atan2");
  // Broadcasting, and integers give float32.
  const Tensor column = from_vector<int64_t>({1, -1}, {2, 1});
  const Tensor row = from_vector<int64_t>({1, 0, -1}, {3});
  const Tensor grid = ember::atan2(column, row);
  CHECK(grid.sizes() == Dims{2, 3});
  CHECK(grid.dtype() == kFloat32);
  CHECK(values_of(grid)[4] == static_cast<double>(static_cast<float>(-pi / 2)));
}

TEST_CASE("fmod takes the dividend's sign, remainder the divisor's, in floats and integers") {
  const std::vector<double> a = {7.0, -7.0, 7.0, -7.0, 6.0, -7.5};
  const std::vector<double> b = {3.0, 3.0, -3.0, -3.0, 3.0, 2.0};
  const std::vector<double> fmod_expected = {1.0, -1.0, 1.0, -1.0, 0.0, -1.5};
  const std::vector<double> remainder_expected = {1.0, 2.0, -2.0, -1.0, 0.0, 0.5};
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    INFO(dtype_name(dtype));
    const Tensor ta = tensor_from(a, {6}, dtype), tb = tensor_from(b, {6}, dtype);
    CHECK(values_of(ember::fmod(ta, tb)) == fmod_expected);
    CHECK(values_of(ember::remainder(ta, tb)) == remainder_expected);
    CHECK(ember::fmod(ta, tb).dtype() == dtype);
  }
  for (DType dtype : {kInt64, kInt32}) {
    INFO(dtype_name(dtype));
    const Tensor ta = tensor_from({7, -7, 7, -7, 6, -8}, {6}).to(dtype);
    const Tensor tb = tensor_from({3, 3, -3, -3, 3, 2}, {6}).to(dtype);
    const Tensor f = ember::fmod(ta, tb), r = ember::remainder(ta, tb);
    CHECK(f.dtype() == dtype);
    CHECK(r.dtype() == dtype);
    CHECK(values_of(f) == std::vector<double>{1, -1, 1, -1, 0, 0});
    CHECK(values_of(r) == std::vector<double>{1, 2, -2, -1, 0, 0});
  }
  // The lowest integer by -1 overflows C's %; its remainder is 0.
  const Tensor lowest64 = from_vector<int64_t>({std::numeric_limits<int64_t>::min()});
  CHECK(ember::fmod(lowest64, from_vector<int64_t>({-1})).item<int64_t>() == 0);
  CHECK(ember::remainder(lowest64, from_vector<int64_t>({-1})).item<int64_t>() == 0);
  const Tensor lowest32 = from_vector<int32_t>({std::numeric_limits<int32_t>::min()});
  CHECK(ember::remainder(lowest32, from_vector<int32_t>({-1})).item<int32_t>() == 0);
  CHECK(ember::fmod(lowest32, from_vector<int32_t>({7})).item<int32_t>() == -2147483648 % 7);
  // A floating zero divisor gives NaN, an infinite one the dividend (fmod) as in C.
  const std::vector<double> by_zero =
      values_of(ember::fmod(tensor_from({1.0, 2.0}, {2}), tensor_from({0.0, kInf}, {2})));
  CHECK(std::isnan(by_zero[0]));
  CHECK(by_zero[1] == 2.0);
  CHECK(std::isnan(values_of(ember::remainder(tensor_from({1.0}, {1}), tensor_from({0.0}, {1})))[0]));
}

TEST_CASE("fmod and remainder promote like add and take host divisors in the tensor's dtype") {
  const Tensor ints = from_vector<int32_t>({-7, 5});
  CHECK(ember::fmod(ints, 3).dtype() == kInt32);
  CHECK(values_of(ember::remainder(ints, 3)) == std::vector<double>{2, 2});
  const Tensor by_fraction = ember::fmod(ints, 2.5);
  CHECK(by_fraction.dtype() == kFloat32);
  CHECK(values_of(by_fraction) == std::vector<double>{-2.0, 0.0});
  const Tensor halves = tensor_from({-7.5, 5.0}, {2}, kFloat16);
  CHECK(ember::remainder(halves, 2.0).dtype() == kFloat16);
  CHECK(values_of(ember::remainder(halves, 2.0)) == std::vector<double>{0.5, 1.0});
  CHECK(ember::fmod(ints, from_vector<int64_t>({3, 3})).dtype() == kInt64);
  CHECK(ember::fmod(tensor_from({1.0}, {1}, kFloat32), from_vector<int64_t>({3})).dtype() == kFloat32);
  const Tensor grid = ember::remainder(from_vector<int64_t>({-3, 4}, {2, 1}), from_vector<int64_t>({2, 3, -2}));
  CHECK(grid.sizes() == Dims{2, 3});
  CHECK(values_of(grid) == std::vector<double>{1, 0, -1, 0, 1, 0});
}

TEST_CASE("fmod and remainder take a host divisor past a 16-bit dtype's range as PyTorch: inf in the cast") {
  const Tensor halves = tensor_from({5.0, -3.0}, {2}, kFloat16);
  const Tensor by_large = ember::fmod(halves, 1e6);
  CHECK(by_large.dtype() == kFloat16);
  CHECK(values_of(by_large) == std::vector<double>{5.0, -3.0});  // fmod(x, inf) is x
  CHECK(values_of(ember::remainder(halves, 70000.0)) == std::vector<double>{5.0, kInf});
  // A float32 tensor keeps its dtype, a 0-d one too; the divisor is rounded to the tensor's
  // dtype first, as PyTorch's kernel casts it: 0.1 in bfloat16 is 0.10009765625, so 1 - 9 of it.
  CHECK(ember::remainder(tensor_from({1.0}, {1}, kFloat32), 0.1).dtype() == kFloat32);
  CHECK(ember::fmod(tensor_from({1.0}, {1}, kFloat32).reshape({}), 2.5).dtype() == kFloat32);
  const Tensor zero_d = ember::remainder(tensor_from({1.0}, {1}, kBFloat16).reshape({}), 0.1);
  CHECK(zero_d.dtype() == kBFloat16);
  CHECK(zero_d.item() == 1.0 - 9 * 0.10009765625);
}

TEST_CASE("fmod and remainder refuse an integer zero divisor and bool tensors, naming the op") {
  const Tensor ints = from_vector<int64_t>({4, 5, 6});
  CHECK_THROWS_WITH_AS(ember::fmod(ints, from_vector<int64_t>({1, 0, 2})),
                       doctest::Contains("fmod: integer division by zero (the divisor of shape [3], read as int64, "
                                         "holds a 0"),
                       Error);
  CHECK_THROWS_WITH_AS(ember::remainder(ints, 0), doctest::Contains("remainder: integer division by zero"), Error);
  // A bool divisor of an integer tensor is an integer divisor: false is 0.
  CHECK_THROWS_WITH_AS(ember::fmod(ints, from_vector<bool>({true, false, true})),
                       doctest::Contains("fmod: integer division by zero"), Error);
  const Tensor mask = from_vector<bool>({true, false});
  CHECK_THROWS_WITH_AS(ember::remainder(mask, mask), doctest::Contains("remainder: bool tensors are not supported"),
                       Error);
  // The divisor is read in the result's dtype: 2^32 as a 0-d int64 is 0 as the int32 the loop uses.
  const Tensor small = from_vector<int32_t>({5, 7});
  const Tensor wraps_to_zero = scalar_tensor(4294967296.0, {.dtype = kInt64});
  CHECK_THROWS_WITH_AS(ember::fmod(small, wraps_to_zero),
                       doctest::Contains("fmod: integer division by zero (the divisor of shape [], read as int32"),
                       Error);
  CHECK(values_of(ember::remainder(small, scalar_tensor(4294967299.0, {.dtype = kInt64}))) ==
        std::vector<double>{2, 1});
  // An empty result divides nothing: a zero in a divisor broadcast over no rows is no error.
  CHECK(ember::fmod(from_vector<int64_t>({}, {0, 2}), from_vector<int64_t>({0, 1})).sizes() == Dims{0, 2});
  // An empty divisor has no zero.
  CHECK(ember::fmod(from_vector<int64_t>({}), from_vector<int64_t>({})).numel() == 0);
}

TEST_CASE("the math ops' gradients are their closed forms, fmod's and remainder's divisor's too") {
  const std::vector<double> at = {-0.7, -0.2, 0.3, 0.6};
  Tensor x = tensor_from(at, {4}).requires_grad_();
  using Unary = std::function<Tensor(const Tensor&)>;
  using Derivative = std::function<double(double)>;
  const std::vector<std::tuple<const char*, Unary, Derivative>> ops = {
      {"tan", [](const Tensor& t) { return ember::tan(t); },
       [](double v) { return 1.0 + std::tan(v) * std::tan(v); }},
      {"asin", [](const Tensor& t) { return ember::asin(t); },
       [](double v) { return 1.0 / std::sqrt(1.0 - v * v); }},
      {"acos", [](const Tensor& t) { return ember::acos(t); },
       [](double v) { return -1.0 / std::sqrt(1.0 - v * v); }},
      {"atan", [](const Tensor& t) { return ember::atan(t); }, [](double v) { return 1.0 / (1.0 + v * v); }},
      {"sinh", [](const Tensor& t) { return ember::sinh(t); }, [](double v) { return std::cosh(v); }},
      {"cosh", [](const Tensor& t) { return ember::cosh(t); }, [](double v) { return std::sinh(v); }},
      {"asinh", [](const Tensor& t) { return ember::asinh(t); },
       [](double v) { return 1.0 / std::sqrt(v * v + 1.0); }},
      {"acosh", [](const Tensor& t) { return ember::acosh(add(t, 2.0)); },
       [](double v) { return 1.0 / std::sqrt((v + 2.0) * (v + 2.0) - 1.0); }},
      {"atanh", [](const Tensor& t) { return ember::atanh(t); }, [](double v) { return 1.0 / (1.0 - v * v); }},
      {"log2", [](const Tensor& t) { return ember::log2(add(t, 1.0)); },
       [](double v) { return 1.0 / ((v + 1.0) * std::numbers::ln2); }},
      {"log10", [](const Tensor& t) { return ember::log10(add(t, 1.0)); },
       [](double v) { return 1.0 / ((v + 1.0) * std::numbers::ln10); }},
      {"exp2", [](const Tensor& t) { return ember::exp2(t); },
       [](double v) { return std::exp2(v) * std::numbers::ln2; }},
      {"erfc", [](const Tensor& t) { return ember::erfc(t); },
       [](double v) { return -2.0 / std::sqrt(std::numbers::pi) * std::exp(-v * v); }},
  };
  for (const auto& [name, op, derivative] : ops) {
    INFO(name);
    x.set_grad({});
    sum(op(x)).backward();
    const std::vector<double> grad = values_of(x.grad());
    for (size_t i = 0; i < at.size(); ++i) CHECK(grad[i] == doctest::Approx(derivative(at[i])).epsilon(1e-13));
  }
  // d/db (a - q b) = -q with q = trunc(a / b) for fmod and floor(a / b) for remainder; d/da = 1.
  Tensor a = tensor_from({7.5, -7.5, 7.5}, {3}).requires_grad_();
  Tensor b = tensor_from({2.0, 2.0, -2.0}, {3}).requires_grad_();
  sum(ember::fmod(a, b)).backward();
  CHECK(values_of(a.grad()) == std::vector<double>{1, 1, 1});
  CHECK(values_of(b.grad()) == std::vector<double>{-3, 3, 3});
  a.set_grad({});
  b.set_grad({});
  sum(ember::remainder(a, b)).backward();
  CHECK(values_of(a.grad()) == std::vector<double>{1, 1, 1});
  CHECK(values_of(b.grad()) == std::vector<double>{-3, 4, 4});
  // remainder's quotient is PyTorch's floor division, which agrees with the forward value where
  // a / b rounds up to a whole number: remainder(1, 0.1) = 1 - 9 (0.1) (0.1 is a bit above 1/10),
  // so the divisor's gradient is -9, not -floor(1 / 0.1) = -10; an infinite divisor's is +1.
  for (DType dtype : {kFloat64, kFloat32}) {
    INFO(dtype_name(dtype));
    Tensor one = tensor_from({1.0, -5.0}, {2}, dtype).requires_grad_();
    Tensor tenth = tensor_from({0.1, kInf}, {2}, dtype).requires_grad_();
    const Tensor r = ember::remainder(one, tenth);
    CHECK(values_of(r)[0] == doctest::Approx(0.1).epsilon(1e-6));
    CHECK(values_of(r)[1] == kInf);
    sum(r).backward();
    CHECK(values_of(tenth.grad()) == std::vector<double>{-9.0, 1.0});
  }
  // In bfloat16 the quotient is computed in float32 and rounded once: 18.5 / 0.0986 rounded to
  // bfloat16 first would be 188, where the forward took 187 divisors.
  Tensor dividend = tensor_from({18.5}, {1}, kBFloat16).requires_grad_();
  Tensor divisor = tensor_from({0.0986}, {1}, kBFloat16).requires_grad_();
  const double stored_a = values_of(dividend)[0], stored_b = values_of(divisor)[0];
  const double whole = std::floor(stored_a / stored_b);
  CHECK(whole == 187.0);
  sum(ember::remainder(dividend, divisor)).backward();
  CHECK(values_of(divisor.grad())[0] == -whole);
  divisor.set_grad({});
  sum(ember::fmod(dividend, divisor)).backward();
  CHECK(values_of(divisor.grad())[0] == -whole);
  // atan2: (b, -a) / (a^2 + b^2), summed over a broadcast dim.
  const Tensor y = tensor_from({3.0}, {1}).requires_grad_();
  const Tensor z = tensor_from({4.0, -4.0}, {2}).requires_grad_();
  sum(ember::atan2(y, z)).backward();
  CHECK(values_of(y.grad())[0] == 0.0);  // 4/25 and -4/25, exact negatives
  const std::vector<double> z_grad = values_of(z.grad());
  CHECK(z_grad[0] == doctest::Approx(-3.0 / 25).epsilon(1e-15));
  CHECK(z_grad[1] == doctest::Approx(-3.0 / 25).epsilon(1e-15));
}

}  // namespace test_pointwise_math
