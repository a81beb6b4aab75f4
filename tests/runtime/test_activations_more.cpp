// nn/functional_activations_more.h and nn/modules/activation_more.h: each activation against a float64
// reference written here (kinks, infinities, NaN, large magnitudes; float64, float32, bf16), gradients
// by central differences away from the kinks and exactly PyTorch's at them, the modules' reprs,
// PReLU's parameter, rrelu's random slopes, and every error message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_activations_more {

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using Unary = std::function<Tensor(const Tensor&)>;
using Reference = std::function<double(double)>;

// Kinks of every function here, the infinities, NaN and large magnitudes.
const std::vector<double> kPoints = {-kInf, -1000.0, -100.0, -50.0, -20.0, -6.0,  -3.5,  -3.0,   -2.5, -1.0,
                                     -0.5,  -0.25,   -1e-10, -0.0,  0.0,   1e-10, 0.25,  0.5,    1.0,  2.5,
                                     3.0,   3.5,     6.0,    7.0,   20.0,  50.0,  100.0, 1000.0, kInf, kNaN};

// Both NaN, or within atol + rtol |expected| (equal infinities pass).
void check_close(const std::vector<double>& got, const std::vector<double>& expected, double rtol, const char* what) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what, " element ", i, ": got ", got[i], ", expected ", expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(std::abs(got[i] - expected[i]) <= rtol * (1.0 + std::abs(expected[i])));
    }
  }
}

double tolerance_of(DType dtype) { return dtype == kFloat64 ? 1e-13 : dtype == kFloat32 ? 2e-6 : 1e-2; }

// function(x) for x = kPoints in `dtype` against reference(x) on the values x holds after rounding.
void check_values(const Unary& function, const Reference& reference, DType dtype, const char* what) {
  INFO(what, " in ", dtype);
  const Tensor x = doubles(kPoints).to(dtype);
  const Tensor y = function(x);
  CHECK(y.dtype() == dtype);
  std::vector<double> expected;
  for (double value : values_of(x)) expected.push_back(reference(value));
  // The reference rounded to the dtype: past its range it is infinite there too.
  check_close(values_of(y), values_of(doubles(expected).to(dtype)), tolerance_of(dtype), what);
}

// d(sum f(x))/dx at `at`, float64.
std::vector<double> gradient_at(const Unary& function, const std::vector<double>& at) {
  const Tensor x = leaf_of(at);
  sum(function(x)).backward();
  return values_of(x.grad());
}

// Exact equality, NaN equal to NaN.
void check_exact(const std::vector<double>& got, const std::vector<double>& expected, const char* what) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what, " element ", i, ": got ", got[i], ", expected ", expected[i]);
    CHECK(((std::isnan(got[i]) && std::isnan(expected[i])) || got[i] == expected[i]));
  }
}

double nan_or(double x, double value) { return std::isnan(x) ? x : value; }
double ref_hardtanh(double x, double low, double high) { return nan_or(x, x <= low ? low : x >= high ? high : x); }
double ref_hardswish(double x) { return nan_or(x, x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0); }
double ref_hardsigmoid(double x) { return nan_or(x, std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0); }
double ref_celu(double x, double alpha) { return x > 0.0 ? x : alpha * std::expm1(x / alpha); }
double ref_logsigmoid(double x) { return std::min(x, 0.0) - std::log1p(std::exp(-std::abs(x))); }
double ref_mish(double x) { return x * std::tanh(std::log1p(std::exp(x))); }
double ref_softshrink(double x, double l) { return x > l ? x - l : x < -l ? x + l : nan_or(x, 0.0); }
double ref_hardshrink(double x, double l) { return x >= -l && x <= l ? 0.0 : x; }
double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct Case {
  const char* name;
  Unary function;
  Reference reference;
};

const std::vector<Case>& pointwise_cases() {
  static const std::vector<Case> cases = {
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(x); }, [](double x) { return ref_hardtanh(x, -1, 1); }},
      {"hardtanh(-2, 0.5)", [](const Tensor& x) { return F::hardtanh(x, -2.0, 0.5); },
       [](double x) { return ref_hardtanh(x, -2.0, 0.5); }},
      {"relu6", [](const Tensor& x) { return F::relu6(x); }, [](double x) { return ref_hardtanh(x, 0, 6); }},
      {"threshold(1, 5)", [](const Tensor& x) { return F::threshold(x, 1.0, 5.0); },
       [](double x) { return x <= 1.0 ? 5.0 : x; }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }, ref_hardswish},
      {"hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x); }, ref_hardsigmoid},
      {"mish", [](const Tensor& x) { return F::mish(x); }, ref_mish},
      {"celu", [](const Tensor& x) { return F::celu(x); }, [](double x) { return ref_celu(x, 1.0); }},
      {"celu(2)", [](const Tensor& x) { return F::celu(x, 2.0); }, [](double x) { return ref_celu(x, 2.0); }},
      {"celu(-0.5)", [](const Tensor& x) { return F::celu(x, -0.5); }, [](double x) { return ref_celu(x, -0.5); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }, ref_logsigmoid},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }, [](double x) { return x / (1.0 + std::abs(x)); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }, [](double x) { return x - std::tanh(x); }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x); }, [](double x) { return ref_softshrink(x, 0.5); }},
      {"softshrink(2.5)", [](const Tensor& x) { return F::softshrink(x, 2.5); },
       [](double x) { return ref_softshrink(x, 2.5); }},
      {"hardshrink", [](const Tensor& x) { return F::hardshrink(x); }, [](double x) { return ref_hardshrink(x, 0.5); }},
      {"rrelu (eval)", [](const Tensor& x) { return F::rrelu(x); },
       [](double x) { return x > 0 ? x : x * (1.0 / 8.0 + 1.0 / 3.0) / 2.0; }},
  };
  return cases;
}

}  // namespace

TEST_CASE("each activation matches its float64 reference at kinks, infinities, NaN and large values") {
  for (const Case& c : pointwise_cases())
    for (DType dtype : {kFloat64, kFloat32, kBFloat16}) check_values(c.function, c.reference, dtype, c.name);
}

TEST_CASE("large magnitudes stay finite where the math is: logsigmoid(-100), mish(50), softsign, celu") {
  const std::vector<double> log_sigmoid = values_of(F::logsigmoid(doubles({-100.0, -1000.0, 1000.0, 40.0})));
  CHECK(log_sigmoid[0] == doctest::Approx(-100.0 - std::exp(-100.0)).epsilon(1e-15));
  CHECK(log_sigmoid[1] == -1000.0);
  CHECK(log_sigmoid[2] == 0.0);
  CHECK(log_sigmoid[3] == doctest::Approx(-std::exp(-40.0)).epsilon(1e-12));  // not rounded to 0
  const std::vector<double> mish = values_of(F::mish(doubles({50.0, 1000.0}).to(kFloat32)));
  CHECK(mish[0] == 50.0);
  CHECK(mish[1] == 1000.0);
  // Tiny negatives keep their digits through expm1.
  CHECK(values_of(F::celu(doubles({-1e-10}), 2.0))[0] == doctest::Approx(2.0 * std::expm1(-0.5e-10)).epsilon(1e-12));
}

TEST_CASE("gradients at the kinks are exactly PyTorch's backward kernels'") {
  check_exact(gradient_at([](const Tensor& x) { return F::hardtanh(x); }, {-1.0, 1.0, -2.0, 2.0, 0.5, kNaN}),
              {0.0, 0.0, 0.0, 0.0, 1.0, 1.0}, "hardtanh'");
  check_exact(gradient_at([](const Tensor& x) { return F::relu6(x); }, {0.0, 6.0, -1.0, 7.0, 3.0}),
              {0.0, 0.0, 0.0, 0.0, 1.0}, "relu6'");
  check_exact(gradient_at([](const Tensor& x) { return F::threshold(x, 1.0, 5.0); }, {1.0, 0.5, 1.5, kNaN}),
              {0.0, 0.0, 1.0, 1.0}, "threshold'");
  check_exact(
      gradient_at([](const Tensor& x) { return F::hardswish(x); }, {-3.0, 3.0, -4.0, 4.0, 0.0, 1.5, -kInf, kInf, kNaN}),
      {-0.5, 1.5, 0.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0}, "hardswish'");
  check_exact(gradient_at([](const Tensor& x) { return F::hardsigmoid(x); }, {-3.0, 3.0, -4.0, 4.0, 0.0, kNaN}),
              {0.0, 0.0, 0.0, 0.0, 1.0 / 6.0, 0.0}, "hardsigmoid'");
  check_exact(gradient_at([](const Tensor& x) { return F::celu(x, 2.0); }, {0.0, 1.0, 1000.0}), {1.0, 1.0, 1.0},
              "celu'");
  check_exact(gradient_at([](const Tensor& x) { return F::logsigmoid(x); }, {0.0, -kInf, kInf, -1000.0, 1000.0}),
              {0.5, 1.0, 0.0, 1.0, 0.0}, "logsigmoid'");
  check_exact(gradient_at([](const Tensor& x) { return F::softshrink(x); }, {0.5, -0.5, 0.0, 1.0, -1.0, kNaN}),
              {0.0, 0.0, 0.0, 1.0, 1.0, 1.0}, "softshrink'");
  check_exact(gradient_at([](const Tensor& x) { return F::hardshrink(x); }, {0.5, -0.5, 0.0, 1.0, -1.0, kNaN}),
              {0.0, 0.0, 0.0, 1.0, 1.0, 1.0}, "hardshrink'");
  check_exact(gradient_at([](const Tensor& x) { return F::rrelu(x, 0.25, 0.75); }, {0.0, -1.0, 2.0}), {0.5, 0.5, 1.0},
              "rrelu' (eval)");
  // Smooth ones at points where a careless composite would give NaN or the wrong side.
  const std::vector<double> mish_gradient = gradient_at([](const Tensor& x) { return F::mish(x); }, {0.0, 1000.0});
  CHECK(mish_gradient[0] == doctest::Approx(std::tanh(std::log(2.0))).epsilon(1e-15));
  CHECK(mish_gradient[1] == 1.0);
  const std::vector<double> celu_gradient = gradient_at([](const Tensor& x) { return F::celu(x, 2.0); }, {-2.0});
  CHECK(celu_gradient[0] == doctest::Approx(std::exp(-1.0)).epsilon(1e-15));
}

TEST_CASE("gradients away from the kinks match central differences") {
  const std::vector<std::pair<const char*, Unary>> functions = {
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(mul(x, 2.0), -0.9, 1.3); }},
      {"relu6", [](const Tensor& x) { return F::relu6(mul(x, 8.0)); }},
      {"threshold", [](const Tensor& x) { return F::threshold(x, 0.05, -3.0); }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(mul(x, 5.0)); }},
      {"hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(mul(x, 5.0)); }},
      {"mish", [](const Tensor& x) { return F::mish(mul(x, 4.0)); }},
      {"celu", [](const Tensor& x) { return F::celu(mul(x, 3.0), 0.7); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(mul(x, 6.0)); }},
      {"softsign", [](const Tensor& x) { return F::softsign(mul(x, 3.0)); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x, 0.3); }},
      {"hardshrink", [](const Tensor& x) { return F::hardshrink(x, 0.3); }},
      {"softmin", [](const Tensor& x) { return F::softmin(mul(x, 2.0), 1); }},
      {"glu", [](const Tensor& x) { return F::glu(x); }},
      {"glu dim 0", [](const Tensor& x) { return F::glu(x, 0); }},
  };
  for (const auto& [name, function] : functions) {
    INFO(name);
    gradcheck_leaves([&](const std::vector<Tensor>& inputs) { return function(inputs[0]); }, {leaf({4, 6}, 11)});
  }
  // prelu: both the input and the per-channel weight.
  gradcheck_leaves([](const std::vector<Tensor>& inputs) { return F::prelu(inputs[0], inputs[1]); },
            {leaf({2, 3, 4}, 5), leaf({3}, 6)});
  gradcheck_leaves([](const std::vector<Tensor>& inputs) { return F::prelu(inputs[0], inputs[1]); },
            {leaf({2, 3, 4}, 7), leaf({1}, 8)});
}

TEST_CASE("second derivatives (create_graph) match central differences of the first") {
  const std::vector<std::pair<const char*, Unary>> functions = {
      {"hardswish", [](const Tensor& x) { return F::hardswish(mul(x, 5.0)); }},
      {"mish", [](const Tensor& x) { return F::mish(mul(x, 4.0)); }},
      {"celu", [](const Tensor& x) { return F::celu(mul(x, 3.0), 0.7); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(mul(x, 6.0)); }},
      {"softsign", [](const Tensor& x) { return F::softsign(mul(x, 3.0)); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }},
      {"softmin", [](const Tensor& x) { return F::softmin(mul(x, 2.0), 1); }},
      {"glu", [](const Tensor& x) { return F::glu(x); }},
  };
  for (const auto& [name, function] : functions) {
    INFO(name);
    const Unary& f = function;
    // gradcheck evaluates the function under no-grad for its differences: the first derivative then
    // comes from a detached copy, with grad mode on just for it.
    const auto first_derivative = [&](const std::vector<Tensor>& inputs) {
      const bool recording = grad_mode_enabled();
      AutoGradMode enabled(true);
      const Tensor x = recording ? inputs[0] : inputs[0].detach().requires_grad_();
      const Tensor y = f(x);
      return autograd::grad({sum(mul(y, small_tensor(y.sizes(), 21)))}, {x}, {}, std::nullopt, recording)[0];
    };
    gradcheck_leaves(first_derivative, {leaf({4, 6}, 13)}, 1e-5);
  }
}

TEST_CASE("glu, softmin and prelu against references on tensors") {
  const Tensor x = small_tensor({2, 4}, 3);
  const std::vector<double> v = values_of(x);
  std::vector<double> glu_expected, softmin_expected;
  for (int row = 0; row < 2; ++row) {
    for (int col = 0; col < 2; ++col) glu_expected.push_back(v[row * 4 + col] * sigmoid_of(v[row * 4 + col + 2]));
    double total = 0.0;
    for (int col = 0; col < 4; ++col) total += std::exp(-v[row * 4 + col]);
    for (int col = 0; col < 4; ++col) softmin_expected.push_back(std::exp(-v[row * 4 + col]) / total);
  }
  check_close(values_of(F::glu(x)), glu_expected, 1e-15, "glu");
  CHECK(F::glu(x).sizes() == Dims{2, 2});
  CHECK(F::glu(x, 0).sizes() == Dims{1, 4});
  check_close(values_of(F::softmin(x, 1)), softmin_expected, 1e-15, "softmin");
  // prelu: [N, C, L] with C weights, the weight of channel c on every x <= 0 of that channel.
  const Tensor input = small_tensor({2, 3, 2}, 4);
  const std::vector<double> slopes = {0.1, -0.5, 2.0};
  const std::vector<double> in = values_of(input);
  std::vector<double> prelu_expected;
  for (size_t i = 0; i < in.size(); ++i) prelu_expected.push_back(in[i] > 0 ? in[i] : slopes[(i / 2) % 3] * in[i]);
  check_close(values_of(F::prelu(input, doubles(slopes))), prelu_expected, 0.0, "prelu per channel");
  // 0-d and 1-D inputs are one channel: a weight of one element, 0-d or [1].
  check_close(values_of(F::prelu(doubles({-2.0}, {}), doubles({0.5}))), {-1.0}, 0.0, "prelu 0-d input");
  check_close(values_of(F::prelu(doubles({-2.0, 3.0}), doubles({0.5}, {}))), {-1.0, 3.0}, 0.0, "prelu 1-D input");
  // An infinite x gives the weight no NaN gradient (the negative side reads min(x, 0)).
  const Tensor weight = leaf_of({0.25});
  const Tensor spiky = leaf_of({kInf, -1.0, 0.0});
  sum(F::prelu(spiky, weight)).backward();
  check_exact(values_of(weight.grad()), {-1.0}, "prelu weight'");
  check_exact(values_of(spiky.grad()), {1.0, 0.25, 0.25}, "prelu input'");
}

TEST_CASE("strided, empty and fp16 inputs, hardtanh with min_val > max_val, and a Sequential of the modules") {
  // A transposed view goes through the same composites as its contiguous copy.
  const Tensor base = mul(small_tensor({4, 6}, 15), 4.0);
  const Tensor strided = transpose(base, 0, 1);
  const std::vector<std::pair<const char*, Unary>> functions = {
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x, 1.0); }},
      {"glu", [](const Tensor& x) { return F::glu(x, 0); }},
      {"prelu",
       [](const Tensor& x) {
         return F::prelu(x, doubles({0.1, 0.2, 0.3, 0.4}));
       }},
  };
  for (const auto& [name, function] : functions) {
    INFO(name);
    check_exact(values_of(function(strided)), values_of(function(contiguous(strided))), "strided");
    const Tensor empty_input = zeros({0, 4}, {.dtype = kFloat64});
    CHECK(function(empty_input).numel() == 0);
  }
  // fp16 is computed in float32 and rounded once.
  const Tensor half = doubles({-4.0, -1.5, 0.5, 2.0}).to(kFloat16);
  check_close(values_of(F::hardswish(half)), {0.0, -0.375, 0.5 * 3.5 / 6.0, 2.0 * 5.0 / 6.0}, 1e-3, "hardswish fp16");
  CHECK(F::mish(half).dtype() == kFloat16);
  // The hardtanh op (aten::hardtanh) has torch.clamp's values for crossed bounds: every element is
  // max_val. F::hardtanh refuses them (test_activation_ops_review.cpp).
  const Attrs crossed{{"min_val", 1.0}, {"max_val", -1.0}};
  check_exact(values_of(dispatch_one(lookup_op("hardtanh"), {doubles({-5.0, 0.0, 5.0})}, crossed)), {-1.0, -1.0, -1.0},
              "crossed bounds");
  // The modules sit in a Sequential; PReLU's weight is its parameter there.
  nn::Sequential model(nn::Hardtanh(), nn::PReLU(nn::PReLUOptions{.dtype = kFloat64}), nn::Mish());
  const Tensor x = doubles({-2.0, 0.5, 3.0});
  check_close(values_of(model->forward(x)), values_of(F::mish(F::prelu(F::hardtanh(x), doubles({0.25})))), 1e-15,
              "Sequential");
  CHECK(model->named_parameters().contains("1.weight"));
}

TEST_CASE("hardtanh and threshold take integer tensors with truncated bounds, as PyTorch's") {
  const Tensor integers = from_vector<int64_t>({-5, 0, 1, 5});
  const Tensor clamped = F::hardtanh(integers, -1.5, 2.7);
  CHECK(clamped.dtype() == kInt64);
  CHECK(clamped.to_vector<int64_t>() == std::vector<int64_t>{-1, 0, 1, 2});
  CHECK(F::relu6(from_vector<int64_t>({-5, 9})).to_vector<int64_t>() == std::vector<int64_t>{0, 6});
  const Tensor replaced = F::threshold(integers, 1.9, 7.8);
  CHECK(replaced.dtype() == kInt64);
  CHECK(replaced.to_vector<int64_t>() == std::vector<int64_t>{7, 7, 7, 5});
}

TEST_CASE("threshold and hardshrink compare bf16 with their numbers rounded to bf16, as PyTorch's kernels") {
  // 0.3 is 0.30078125 in bf16: the element equals the rounded number, so it is replaced (zeroed).
  const Tensor x = doubles({0.30078125, 0.3203125}).to(kBFloat16);
  check_exact(values_of(F::threshold(x, 0.3, -1.0)), {-1.0, 0.3203125}, "threshold bf16");
  check_exact(values_of(F::hardshrink(x, 0.3)), {0.0, 0.3203125}, "hardshrink bf16");
  CHECK(F::threshold(x, 0.3, -1.0).dtype() == kBFloat16);
}

TEST_CASE("rrelu in training draws one Philox slope per element from lower to upper, which is also its gradient") {
  const Tensor x = leaf_of({-1.0, -2.0, -0.5, -3.0, 2.0, -4.0, -1.5, 0.0});
  manual_seed(17);
  const Tensor y = F::rrelu(x, 0.1, 0.3, true);
  manual_seed(17);
  check_exact(values_of(F::rrelu(x, 0.1, 0.3, true)), values_of(y), "same seed, same slopes");
  sum(y).backward();
  const std::vector<double> in = values_of(x), out = values_of(y), gradient = values_of(x.grad());
  std::vector<double> slopes;
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("element ", i);
    if (in[i] > 0) {
      CHECK(out[i] == in[i]);
      CHECK(gradient[i] == 1.0);
      continue;
    }
    CHECK(gradient[i] >= 0.1);
    CHECK(gradient[i] < 0.3);
    CHECK(out[i] == in[i] * gradient[i]);
    slopes.push_back(gradient[i]);
  }
  std::sort(slopes.begin(), slopes.end());
  CHECK(std::unique(slopes.begin(), slopes.end()) == slopes.end());  // not one slope for all
  // The module draws in train(), uses the mean slope in eval().
  nn::RReLU module(nn::RReLUOptions{.lower = 0.1, .upper = 0.3});
  const Tensor negative = doubles({-1.0, -2.0, -3.0, -4.0});
  module->eval();
  check_close(values_of(module(negative)), {-0.2, -0.4, -0.6, -0.8}, 1e-15, "RReLU eval");
  module->train();
  const std::vector<double> drawn = values_of(module(negative));
  CHECK(drawn != std::vector<double>{-0.2, -0.4, -0.6, -0.8});
}

TEST_CASE("modules print as torch.nn's and call their functions") {
  CHECK(nn::Hardtanh()->str() == "Hardtanh(min_val=-1.0, max_val=1.0)");
  CHECK(nn::ReLU6()->str() == "ReLU6()");
  CHECK(nn::Threshold(0.1, 20.0)->str() == "Threshold(threshold=0.1, value=20.0)");
  CHECK(nn::GLU()->str() == "GLU(dim=-1)");
  CHECK(nn::Hardswish()->str() == "Hardswish()");
  CHECK(nn::Hardsigmoid()->str() == "Hardsigmoid()");
  CHECK(nn::Mish()->str() == "Mish()");
  CHECK(nn::CELU()->str() == "CELU(alpha=1.0)");
  CHECK(nn::Softmin(1)->str() == "Softmin(dim=1)");
  CHECK(nn::LogSigmoid()->str() == "LogSigmoid()");
  CHECK(nn::Softsign()->str() == "Softsign()");
  CHECK(nn::Tanhshrink()->str() == "Tanhshrink()");
  CHECK(nn::Softshrink()->str() == "Softshrink(0.5)");
  CHECK(nn::Hardshrink(nn::HardshrinkOptions{.lambda = 1.25})->str() == "Hardshrink(1.25)");
  CHECK(nn::PReLU()->str() == "PReLU(num_parameters=1)");
  CHECK(nn::RReLU()->str() == "RReLU(lower=0.125, upper=0.3333333333333333)");
  const Tensor x = small_tensor({2, 4}, 9);
  const std::vector<std::pair<Tensor, Tensor>> pairs = {
      {nn::Hardtanh(nn::HardtanhOptions{.min_val = -0.5, .max_val = 0.5})(x), F::hardtanh(x, -0.5, 0.5)},
      {nn::ReLU6()(x), F::relu6(x)},
      {nn::Threshold(0.2, -1.0)(x), F::threshold(x, 0.2, -1.0)},
      {nn::GLU(nn::GLUOptions{.dim = 0})(x), F::glu(x, 0)},
      {nn::Hardswish()(x), F::hardswish(x)},
      {nn::Hardsigmoid()(x), F::hardsigmoid(x)},
      {nn::Mish()(x), F::mish(x)},
      {nn::CELU(nn::CELUOptions{.alpha = 0.5})(x), F::celu(x, 0.5)},
      {nn::Softmin(0)(x), F::softmin(x, 0)},
      {nn::LogSigmoid()(x), F::logsigmoid(x)},
      {nn::Softsign()(x), F::softsign(x)},
      {nn::Tanhshrink()(x), F::tanhshrink(x)},
      {nn::Softshrink(nn::SoftshrinkOptions{.lambda = 0.3})(x), F::softshrink(x, 0.3)},
      {nn::Hardshrink()(x), F::hardshrink(x)},
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    INFO("module ", i);
    check_exact(values_of(pairs[i].first), values_of(pairs[i].second), "module vs function");
  }
}

TEST_CASE("PReLU holds a learnable weight named weight: init, training and a state_dict round trip") {
  nn::PReLU prelu(nn::PReLUOptions{.num_parameters = 3, .init = 0.1, .dtype = kFloat64});
  REQUIRE(prelu->parameters().size() == 1);
  const nn::StateDict state = prelu->state_dict();
  REQUIRE(state.size() == 1);
  REQUIRE(state.contains("weight"));
  check_exact(values_of(state.at("weight")), {0.1, 0.1, 0.1}, "init");
  CHECK(prelu->weight.requires_grad());
  // One SGD step by hand: the weight's gradient is the sum of x over each channel's x <= 0.
  const Tensor x = doubles({-1.0, 2.0, -3.0, -4.0, 5.0, 0.0}, {2, 3});
  sum(prelu(x)).backward();
  check_exact(values_of(prelu->weight.grad()), {-5.0, 0.0, -3.0}, "weight'");
  {
    NoGradGuard no_grad;
    add_(prelu->weight, prelu->weight.grad(), -1.0);
  }
  check_close(values_of(prelu(x)), {-5.1, 2.0, -9.3, -20.4, 5.0, 0.0}, 1e-15, "after a step");
  nn::PReLU restored(nn::PReLUOptions{.num_parameters = 3, .dtype = kFloat64});
  restored->load_state_dict(prelu->state_dict());
  check_exact(values_of(restored(x)), values_of(prelu(x)), "restored");
  // The default shares one slope across channels.
  check_exact(values_of(nn::PReLU()(doubles({-4.0, 4.0}).to(kFloat32))), {-1.0, 4.0}, "default");
}

TEST_CASE("every error names the op, the values and the call site") {
  const Tensor x = small_tensor({2, 3}, 1);
  const Tensor integers = from_vector<int64_t>({1, 2});
  const Tensor mask = from_vector<bool>({true, false});
  const Tensor matrix_weight = doubles({0.25}, {1, 1}), two_weights = doubles({0.25, 0.5});
  const Tensor scalar_input = doubles({1.0}, {});
  const int first_line = __LINE__ + 2;
  const std::vector<std::string> messages = {
      error_of([&] { F::hardtanh(mask); }),
      error_of([&] { F::threshold(mask, 0.0, 1.0); }),
      error_of([&] { F::mish(integers); }),
      error_of([&] { F::celu(x, 0.0); }),
      error_of([&] { F::softshrink(x, -0.5); }),
      error_of([&] { F::glu(doubles({1.0}, {})); }),
      error_of([&] { F::glu(x); }),
      error_of([&] { F::glu(x, 2); }),
      error_of([&] { F::prelu(x, doubles({0.25}).to(kFloat32)); }),
      error_of([&] { F::prelu(x, matrix_weight); }),
      error_of([&] { F::prelu(x, two_weights); }),
      error_of([&] { F::prelu(scalar_input, two_weights); }),
      error_of([&] { F::prelu(x, Tensor{}); }),
      error_of([&] { F::rrelu(x, 0.5, 0.25); }),
      error_of([&] { nn::Hardtanh(nn::HardtanhOptions{.min_val = 1.0, .max_val = 1.0}); }),
      error_of([&] { nn::CELU(nn::CELUOptions{.alpha = 0.0}); }),
      error_of([&] { nn::Softshrink(nn::SoftshrinkOptions{.lambda = -1.0}); }),
      error_of([&] { nn::RReLU(nn::RReLUOptions{.lower = 0.5, .upper = 0.25}); }),
      error_of([&] { nn::PReLU(nn::PReLUOptions{.num_parameters = 0}); }),
  };
  check_messages_name_lines(
      messages,
      {"hardtanh: bool inputs are not supported (shape [2])", "threshold: bool inputs are not supported (shape [2])",
       "mish: expected a floating-point input, got int64 (shape [2])", "celu: alpha cannot be 0",
       "softshrink: lambda must be greater or equal to 0, but found to be -0.5", "glu: does not support scalars",
       "glu: halving dimension must be even, but dimension 1 is size 3 (input shape [2, 3])", "glu",
       "prelu: type promoting not supported, got input float64 and weight float32",
       "prelu: expected `weight` to be a scalar or 1D tensor, but got: ndim = 2",
       "found 2 parameters and channel size 3", "prelu: a 0-d input takes a weight of 1 element, got 2",
       "prelu: weight is undefined",
       "rrelu: lower bound should be less than or equal to the upper bound, got lower = 0.5 and upper = 0.25",
       "Hardtanh: max_val must be greater than min_val, got min_val = 1 and max_val = 1", "CELU: alpha cannot be 0",
       "Softshrink: lambda must be greater or equal to 0, but found to be -1",
       "RReLU: lower bound should be less than or equal to the upper bound",
       "PReLU: num_parameters must be at least 1, got 0"},
      first_line);
}

}  // namespace test_activations_more
