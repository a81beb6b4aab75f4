// leaky_relu, elu and softplus at the values where PyTorch's kernels decide something: 0 and -0.0,
// NaN and the infinities, softplus' switch to x at beta x = threshold, and their gradients at 0;
// their modules' forwards and PyTorch reprs. Random values are the conformance suite's part.
#include <cmath>
#include <limits>

#include "pointwise_test_util.h"

namespace test_activations_parametrized {

using namespace pointwise_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// d(sum(weights * f(x)))/dx at the given points, in float64.
std::vector<double> gradient_of(const std::function<Tensor(const Tensor&)>& function, const std::vector<double>& at) {
  const Tensor x = tensor_from(at, {static_cast<int64_t>(at.size())}).requires_grad_();
  sum(function(x)).backward();
  return values_of(x.grad());
}

const std::vector<double> kSpecial = {-2.0, -0.0, 0.0, 3.0, kNaN, -kInf, kInf};

}  // namespace

TEST_CASE("leaky_relu keeps 0's sign, passes NaN and scales the negative side, as torch's") {
  for (DType dtype : {kFloat32, kFloat64}) {
    INFO(dtype_name(dtype));
    const Tensor x = tensor_from(kSpecial, {7}, dtype);
    const double scaled = dtype == kFloat32 ? static_cast<double>(-2.0f * 0.01f) : -2.0 * 0.01;
    check_same(values_of(leaky_relu(x)), {scaled, -0.0, 0.0, 3.0, kNaN, -kInf, kInf}, "leaky_relu");
    check_same(values_of(leaky_relu(x, 0.5)), {-1.0, -0.0, 0.0, 3.0, kNaN, -kInf, kInf}, "negative_slope 0.5");
  }
}

TEST_CASE("elu goes through expm1: -alpha at -inf, -0.0 kept, tiny negatives keep their digits") {
  for (DType dtype : {kFloat32, kFloat64}) {
    INFO(dtype_name(dtype));
    check_same(values_of(elu(tensor_from(kSpecial, {7}, dtype), 0.5)),
               {dtype == kFloat32 ? static_cast<double>(std::expm1(-2.0f) * 0.5f) : std::expm1(-2.0) * 0.5, -0.0, 0.0,
                3.0, kNaN, -0.5, kInf},
               "elu alpha 0.5");
    // e^x - 1 would give 0 (float32) or lose half the digits (float64) here.
    const std::vector<double> tiny = values_of(elu(tensor_from({-1e-10, -3e-30}, {2}, dtype)));
    CHECK(tiny[0] == doctest::Approx(-1e-10).epsilon(1e-7));
    CHECK(tiny[1] == doctest::Approx(-3e-30).epsilon(1e-7));
  }
}

TEST_CASE("softplus switches to x only where beta x > threshold, and stays finite where torch's overflows") {
  // beta 2, threshold 1: 0.5 is on the logarithm's side (2 * 0.5 is not > 1), 0.5 + 1e-9 on x's.
  const Tensor x = tensor_from({0.5, 0.5 + 1e-9, -kInf, kInf, kNaN, -0.0}, {6});
  check_same(values_of(softplus(x, 2.0, 1.0)), {std::log1p(std::exp(1.0)) / 2.0, 0.5 + 1e-9, 0.0, kInf, kNaN,
                                                std::log(2.0) / 2.0},
             "softplus beta 2 threshold 1");
  // Defaults: threshold 20 (beta 1). log1p(e^20) is 20 + 2.06e-9.
  const std::vector<double> around = values_of(softplus(tensor_from({20.0, 20.5, -40.0}, {3})));
  CHECK(around[0] == doctest::Approx(20.0 + std::exp(-20.0)).epsilon(1e-15));
  CHECK(around[1] == 20.5);
  CHECK(around[2] == doctest::Approx(std::exp(-40.0)).epsilon(1e-12));
  // A threshold above 88: PyTorch's float32 log1p(exp(100)) is inf, ember's 100.
  const std::vector<double> large = values_of(softplus(tensor_from({100.0}, {1}, kFloat32), 1.0, 1000.0));
  CHECK(large[0] == 100.0);
}

TEST_CASE("gradients at 0 and at softplus' switch are PyTorch's: negative_slope, alpha, 1") {
  const std::vector<double> at = {0.0, -0.0, -1.0, 2.0};
  check_same(gradient_of([](const Tensor& x) { return leaky_relu(x, 0.2); }, at), {0.2, 0.2, 0.2, 1.0},
             "leaky_relu'");
  check_same(gradient_of([](const Tensor& x) { return elu(x, 0.5); }, at), {0.5, 0.5, 0.5 * std::exp(-1.0), 1.0},
             "elu'");
  // beta 2, threshold 1: sigmoid(2x) up to x = 0.5, then exactly 1.
  const std::vector<double> softplus_gradient =
      gradient_of([](const Tensor& x) { return softplus(x, 2.0, 1.0); }, {0.0, 0.5, 0.5 + 1e-9, -kInf});
  check_same(softplus_gradient, {0.5, 1.0 / (1.0 + std::exp(-1.0)), 1.0, 0.0}, "softplus'");
  // Past e^z's overflow the derivative is 1, where PyTorch's e^z / (e^z + 1) is NaN.
  check_same(gradient_of([](const Tensor& x) { return softplus(x, 1.0, 1000.0); }, {800.0}), {1.0}, "softplus' at 800");
}

TEST_CASE("nn::LeakyReLU, nn::ELU and nn::Softplus call their ops and print as PyTorch's modules") {
  const Tensor x = tensor_from({-1.5, 0.25, 30.0}, {3});
  CHECK(nn::LeakyReLU()->str() == "LeakyReLU(negative_slope=0.01)");
  CHECK(nn::ELU()->str() == "ELU(alpha=1.0)");
  CHECK(nn::Softplus()->str() == "Softplus(beta=1.0, threshold=20.0)");
  CHECK(nn::LeakyReLU(nn::LeakyReLUOptions{.negative_slope = 0.2})->str() == "LeakyReLU(negative_slope=0.2)");
  CHECK(nn::ELU(nn::ELUOptions{.alpha = 2.0})->str() == "ELU(alpha=2.0)");
  CHECK(nn::Softplus(nn::SoftplusOptions{.beta = 2.0, .threshold = 10.0})->str() ==
        "Softplus(beta=2.0, threshold=10.0)");
  check_same(values_of(nn::LeakyReLU(nn::LeakyReLUOptions{.negative_slope = 0.2})(x)), values_of(leaky_relu(x, 0.2)),
             "LeakyReLU");
  check_same(values_of(nn::ELU(nn::ELUOptions{.alpha = 2.0})(x)), values_of(elu(x, 2.0)), "ELU");
  check_same(values_of(nn::Softplus(nn::SoftplusOptions{.beta = 2.0, .threshold = 10.0})(x)),
             values_of(softplus(x, 2.0, 10.0)), "Softplus");
  CHECK(nn::Softplus()->parameters().empty());
}

TEST_CASE("gelu, silu, leaky_relu, elu and softplus refuse integer and bool tensors, as PyTorch's kernels") {
  const Tensor integers = from_vector<int64_t>({-2, 3});
  const Tensor mask = from_vector<bool>({true, false});
  CHECK_THROWS_WITH_AS(leaky_relu(integers),
                       doctest::Contains("leaky_relu: expected a floating-point tensor, got int64 (shape [2])"), Error);
  CHECK_THROWS_WITH_AS(elu(integers.to(kInt32)), doctest::Contains("elu: expected a floating-point tensor, got int32"),
                       Error);
  CHECK_THROWS_WITH_AS(softplus(mask), doctest::Contains("softplus: expected a floating-point tensor, got bool"),
                       Error);
  CHECK_THROWS_WITH_AS(gelu(integers), doctest::Contains("gelu: expected a floating-point tensor"), Error);
  CHECK_THROWS_WITH_AS(silu(integers), doctest::Contains("silu: expected a floating-point tensor"), Error);
  CHECK_THROWS_WITH_AS(nn::LeakyReLU()->forward(integers), doctest::Contains("leaky_relu: expected a floating-point"),
                       Error);
  // sigmoid and tanh convert integers to float32, as torch.sigmoid and torch.tanh do.
  CHECK(sigmoid(integers).dtype() == kFloat32);
  CHECK(ember::tanh(integers).dtype() == kFloat32);
}

}  // namespace test_activations_parametrized
