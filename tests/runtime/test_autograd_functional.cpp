// autograd::functional (runtime/autograd/functional.h) against closed forms in float64: the
// Jacobian of a linear map is its matrix, the Hessian of x^T A x is A + A^T, hvp/vhp/jvp are the
// matching matrix products, and an MLP's vjp matches central finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_autograd_functional {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;
namespace functional = ember::autograd::functional;

namespace {

Tensor float64(std::vector<double> values, const Dims& sizes) {
  return from_vector<double>(values, sizes, {.dtype = kFloat64});
}

// Not the identity: a non-symmetric matrix, no zeros.
Tensor matrix_a() { return float64({1.0, 2.0, -3.0, 0.5, 4.0, 6.0, -2.0, 1.5, 5.0, 7.0, -1.0, 0.25}, {3, 4}); }

void check_close(const Tensor& actual, const Tensor& expected, double tolerance = 1e-12) {
  REQUIRE(actual.sizes() == expected.sizes());
  const std::vector<double> got = actual.to_vector<double>();
  const std::vector<double> want = expected.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(tolerance));
}

// `tensor` with `delta` added to its flat element `index`.
Tensor nudged(const Tensor& tensor, size_t index, double delta) {
  std::vector<double> values = tensor.to_vector<double>();
  values[index] += delta;
  return float64(values, tensor.sizes());
}

}  // namespace

TEST_CASE("functional::jacobian: a linear map's Jacobian is its matrix, shaped output + input") {
  const Tensor a = matrix_a();
  const Tensor x = float64({1.0, -1.0, 2.0, 0.5}, {4});
  const Tensor jacobian = functional::jacobian([&](const Tensor& input) { return matmul(a, input); }, x);
  check_close(jacobian, a);
  CHECK_FALSE(jacobian.requires_grad());
  // X [2, 3] -> X B [2, 2]: d (X B)[p, q] / d X[r, s] = (p == r) B[s, q], shape [2, 2, 2, 3].
  const Tensor b = float64({1.5, -2.0, 3.0, 0.5, -1.0, 4.0}, {3, 2});
  const Tensor big_x = float64({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});
  const Tensor blocks = functional::jacobian([&](const Tensor& input) { return matmul(input, b); }, big_x);
  REQUIRE(blocks.sizes() == Dims{2, 2, 2, 3});
  std::vector<double> expected;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 2; ++q)
      for (int r = 0; r < 2; ++r)
        for (int s = 0; s < 3; ++s) expected.push_back(p == r ? b.to_vector<double>()[s * 2 + q] : 0.0);
  check_close(blocks, float64(expected, {2, 2, 2, 3}));
  // An output without elements: an empty Jacobian of shape output + input.
  const Tensor empty = functional::jacobian([](const Tensor& input) { return input.narrow(0, 0, 0); }, x);
  CHECK(empty.sizes() == Dims{0, 4});
  CHECK(empty.dtype() == kFloat64);
  // A zero-dim output: the Jacobian has the input's shape.
  check_close(functional::jacobian([](const Tensor& input) { return mul(input, input).sum(); }, x), mul(x, 2.0));
}

TEST_CASE("functional::jacobian: several inputs and outputs, unused inputs and strict mode") {
  const Tensor x = float64({1.0, 2.0, 3.0}, {3});
  const Tensor y = float64({-1.0, 0.5, 4.0}, {3});
  const functional::MultiOutputFunction fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{mul(in[0], in[1]), in[0].sum()};
  };
  const std::vector<std::vector<Tensor>> jacobian = functional::jacobian(fn, {x, y});
  REQUIRE(jacobian.size() == 2);
  REQUIRE(jacobian[0].size() == 2);
  const Tensor diag_y = float64({-1.0, 0, 0, 0, 0.5, 0, 0, 0, 4.0}, {3, 3});
  const Tensor diag_x = float64({1.0, 0, 0, 0, 2.0, 0, 0, 0, 3.0}, {3, 3});
  check_close(jacobian[0][0], diag_y);
  check_close(jacobian[0][1], diag_x);
  check_close(jacobian[1][0], float64({1.0, 1.0, 1.0}, {3}));
  check_close(jacobian[1][1], float64({0.0, 0.0, 0.0}, {3}));  // unused: zeros
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { functional::jacobian(fn, {x, y}, false, /*strict=*/true); });
  CHECK(message.find("autograd::functional::jacobian: output 1 of the user-provided function is independent of "
                     "input 1. This is not allowed in strict mode") != std::string::npos);
  CHECK(names_line(message, line));
}

TEST_CASE("functional::hessian: x^T A x has Hessian A + A^T, several inputs give blocks") {
  const Tensor a = float64({1.0, 2.0, -3.0, 0.5, 4.0, 6.0, -2.0, 1.5, 5.0}, {3, 3});
  const Tensor x = float64({0.5, -1.0, 2.0}, {3});
  const auto quadratic = [&](const Tensor& input) { return matmul(input, matmul(a, input)); };
  const Tensor hessian = functional::hessian(quadratic, x);
  check_close(hessian, add(a, a.t()));
  CHECK_FALSE(hessian.requires_grad());
  // f(x, y) = sum(x x y): H = [[diag(2y), diag(2x)], [diag(2x), 0]].
  const Tensor y = float64({3.0, -2.0}, {2});
  const Tensor x2 = float64({1.5, 4.0}, {2});
  const std::vector<std::vector<Tensor>> blocks =
      functional::hessian([](const std::vector<Tensor>& in) { return mul(mul(in[0], in[0]), in[1]).sum(); }, {x2, y});
  check_close(blocks[0][0], float64({6.0, 0.0, 0.0, -4.0}, {2, 2}));
  check_close(blocks[0][1], float64({3.0, 0.0, 0.0, 8.0}, {2, 2}));
  check_close(blocks[1][0], float64({3.0, 0.0, 0.0, 8.0}, {2, 2}));
  check_close(blocks[1][1], float64({0.0, 0.0, 0.0, 0.0}, {2, 2}));
  // A matrix input: shape input + input.
  const Tensor m = float64({1.0, 2.0, 3.0, 4.0}, {2, 2});
  CHECK(functional::hessian([](const Tensor& input) { return mul(input, input).sum(); }, m).sizes() ==
        Dims{2, 2, 2, 2});
}

TEST_CASE("functional::hvp, vhp and jvp: the matching products with the Hessian and the Jacobian") {
  const Tensor a = float64({1.0, 2.0, -3.0, 0.5, 4.0, 6.0, -2.0, 1.5, 5.0}, {3, 3});
  const Tensor x = float64({0.5, -1.0, 2.0}, {3});
  const Tensor v = float64({1.0, -2.0, 0.75}, {3});
  // A function with a Hessian that depends on x: sum(tanh(A x)) + x^T A x.
  const auto fn = [&](const Tensor& input) {
    return add(tanh(matmul(a, input)).sum(), matmul(input, matmul(a, input)));
  };
  const Tensor hessian = functional::hessian(fn, x);
  const functional::OutputAndProduct hvp = functional::hvp(fn, x, v);
  const functional::OutputAndProduct vhp = functional::vhp(fn, x, v);
  check_close(hvp.product, matmul(hessian, v));
  check_close(vhp.product, matmul(v, hessian));
  check_close(hvp.output, fn(x).detach());
  check_close(vhp.output, fn(x).detach());
  // jvp = J v for a map R^4 -> R^3.
  const Tensor b = matrix_a();
  const auto map = [&](const Tensor& input) { return tanh(matmul(b, input)); };
  const Tensor x4 = float64({0.25, -0.5, 1.0, 0.1}, {4});
  const Tensor v4 = float64({1.0, 2.0, -1.0, 0.5}, {4});
  const functional::OutputAndProduct jvp = functional::jvp(map, x4, v4);
  check_close(jvp.product, matmul(functional::jacobian(map, x4), v4));
  check_close(jvp.output, map(x4));
  CHECK_FALSE(jvp.product.requires_grad());
  CHECK_FALSE(jvp.output.requires_grad());
  // Several inputs: one v per input, products summed (jvp) or one per input (hvp).
  const functional::Function two = [&](const std::vector<Tensor>& in) { return mul(mul(in[0], in[0]), in[1]).sum(); };
  const Tensor p = float64({1.5, 4.0}, {2});
  const Tensor q = float64({3.0, -2.0}, {2});
  const functional::OutputAndProducts hvp_two =
      functional::hvp(two, {p, q}, {float64({1.0, 0.0}, {2}), float64({0.0, 1.0}, {2})});
  check_close(hvp_two.products[0], float64({6.0, 8.0}, {2}));  // diag(2q) e0 + diag(2p) e1
  check_close(hvp_two.products[1], float64({3.0, 0.0}, {2}));  // diag(2p) e0
}

TEST_CASE("functional::vjp: an MLP's vjp matches central finite differences, for every input") {
  manual_seed(7);
  const std::vector<Tensor> inputs = {randn({4}, {.dtype = kFloat64}), randn({5, 4}, {.dtype = kFloat64}),
                                      randn({5}, {.dtype = kFloat64}), randn({2, 5}, {.dtype = kFloat64})};
  const Tensor v = float64({0.7, -1.3}, {2});
  const functional::Function mlp = [](const std::vector<Tensor>& in) {
    return matmul(in[3], tanh(add(matmul(in[1], in[0]), in[2])));
  };
  const functional::OutputAndProducts result = functional::vjp(mlp, inputs, v);
  check_close(result.output, mlp(inputs));
  const double step = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<double> product = result.products[i].to_vector<double>();
    REQUIRE(result.products[i].sizes() == inputs[i].sizes());
    for (size_t e = 0; e < product.size(); ++e) {
      std::vector<Tensor> plus = inputs;
      std::vector<Tensor> minus = inputs;
      plus[i] = nudged(inputs[i], e, step);
      minus[i] = nudged(inputs[i], e, -step);
      const double difference = (mul(mlp(plus), v).sum().item() - mul(mlp(minus), v).sum().item()) / (2 * step);
      CHECK(product[e] == doctest::Approx(difference).epsilon(1e-7));
    }
  }
  // The inputs themselves are untouched: no .grad, no history.
  for (const Tensor& input : inputs) CHECK_FALSE(input.grad().defined());
}

TEST_CASE("functional: create_graph keeps the history to the user's inputs, and NoGradGuard does not matter") {
  const Tensor x = float64({1.0, -2.0, 0.5}, {3}).requires_grad_();
  const auto cube = [](const Tensor& input) { return mul(mul(input, input), input).sum(); };
  const functional::OutputAndProduct first = functional::vjp(cube, x, Tensor(), /*create_graph=*/true);
  check_close(first.product, float64({3.0, 12.0, 0.75}, {3}));  // 3x^2
  REQUIRE(first.product.requires_grad());
  CHECK(first.output.requires_grad());
  check_close(autograd::grad({first.product.sum()}, {x})[0], float64({6.0, -12.0, 3.0}, {3}));  // 6x
  const Tensor hessian = functional::hessian(cube, x, /*create_graph=*/true);
  CHECK(hessian.requires_grad());
  check_close(hessian, float64({6.0, 0, 0, 0, -12.0, 0, 0, 0, 3.0}, {3, 3}));
  CHECK_FALSE(x.grad().defined());
  const NoGradGuard no_grad;
  const functional::OutputAndProduct plain = functional::vjp(cube, x);
  check_close(plain.product, float64({3.0, 12.0, 0.75}, {3}));
  CHECK_FALSE(plain.product.requires_grad());
  CHECK_FALSE(plain.output.requires_grad());
}

TEST_CASE("functional: unused inputs get zeros, strict mode refuses them and outputs without history") {
  const Tensor x = float64({1.0, 2.0}, {2});
  const Tensor y = float64({3.0}, {1});
  const functional::Function first_only = [](const std::vector<Tensor>& in) { return mul(in[0], in[0]).sum(); };
  const functional::OutputAndProducts lenient = functional::vjp(first_only, {x, y});
  check_close(lenient.products[1], float64({0.0}, {1}));
  check_close(functional::vhp(first_only, {x, y}, {x, y}).products[1], float64({0.0}, {1}));
  int line = __LINE__ + 1;
  std::string message = error_of([&] { functional::vjp(first_only, {x, y}, Tensor(), false, /*strict=*/true); });
  CHECK(message.find("autograd::functional::vjp: the output of the user-provided function is independent of input "
                     "1. This is not allowed in strict mode") != std::string::npos);
  CHECK(names_line(message, line));
  const functional::Function constant = [](const std::vector<Tensor>& in) { return ones_like(in[0]).sum(); };
  check_close(functional::vjp(constant, {x}).products[0], float64({0.0, 0.0}, {2}));
  CHECK(error_of([&] { functional::vjp(constant, {x}, Tensor(), false, true); })
            .find("autograd::functional::vjp: output 0 of the user-provided function does not require grad") !=
        std::string::npos);
  // A linear function's Hessian is zero; strict mode refuses it (its gradient has no history).
  const auto linear = [](const Tensor& input) { return mul(input, 2.0).sum(); };
  check_close(functional::hessian(linear, x), float64({0.0, 0.0, 0.0, 0.0}, {2, 2}));
  line = __LINE__ + 1;
  message = error_of([&] { functional::hessian(linear, x, false, /*strict=*/true); });
  CHECK(message.find("autograd::functional::hessian: the jacobian of the user-provided function with respect to "
                     "input 0 is independent of the input") != std::string::npos);
  CHECK(names_line(message, line));
  // strict with create_graph: a result without history (the linear function's) is refused too.
  CHECK(error_of([&] { functional::vjp(linear, x, Tensor(), /*create_graph=*/true, /*strict=*/true); })
            .find("autograd::functional::vjp: the jacobian of the user-provided function is independent of input 0. "
                  "This is not allowed in strict mode with create_graph=true") != std::string::npos);
  CHECK(error_of([&] { functional::jacobian(linear, x, /*create_graph=*/true, /*strict=*/true); })
            .find("autograd::functional::jacobian: the jacobian of output 0 of the user-provided function is "
                  "independent of input 0") != std::string::npos);
  // jvp: an input the output does not use leaves its gradient undefined.
  CHECK(error_of([&] { functional::jvp(first_only, {x, y}, {x, y}, false, /*strict=*/true); })
            .find("autograd::functional::jvp: the output of the user-provided function is independent of input 1") !=
        std::string::npos);
  check_close(functional::jvp(first_only, {x, y}, {x, y}).product, float64({10.0}, {}));  // 2 x . x
}

TEST_CASE("functional: a v of the wrong shape or count is refused, naming the function and the call site") {
  const Tensor x = float64({1.0, 2.0, 3.0}, {3});
  const Tensor y = float64({4.0, 5.0, 6.0}, {3});
  const auto square = [](const Tensor& input) { return mul(input, input); };
  int line = __LINE__ + 1;
  std::string message = error_of([&] { functional::vjp(square, x, float64({1.0, 1.0}, {2})); });
  CHECK(message.find("autograd::functional::vjp: v has shape [2] but the output of fn has shape [3]") !=
        std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { functional::vjp(square, x); })
            .find("autograd::functional::vjp: v can be omitted only when fn returns a single element; it returned "
                  "shape [3]") != std::string::npos);
  const functional::Function both = [](const std::vector<Tensor>& in) { return mul(in[0], in[1]).sum(); };
  line = __LINE__ + 1;
  message = error_of([&] { functional::jvp(both, {x, y}, {x}); });
  CHECK(message.find("autograd::functional::jvp: v has 1 tensors but there are 2 inputs") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { functional::hvp(both, {x, y}, {x, float64({1.0}, {1})}); })
            .find("autograd::functional::hvp: v[1] has shape [1] but input 1 has shape [3]") != std::string::npos);
  CHECK(error_of([&] { functional::vhp(both, {x, y}); })
            .find("autograd::functional::vhp: v can be omitted only for a single input with a single element") !=
        std::string::npos);
  CHECK(error_of([&] { functional::hessian(square, x); })
            .find("autograd::functional::hessian: fn must return a tensor with a single element, it returned shape "
                  "[3]") != std::string::npos);
  CHECK(error_of([&] { functional::jacobian(square, Tensor()); })
            .find("autograd::functional::jacobian: input 0 is an undefined tensor") != std::string::npos);
  CHECK(error_of([&] { functional::jvp(square, arange(0, 3), x); })
            .find("autograd::functional::jvp: input 0 has dtype int64; only floating-point inputs can be "
                  "differentiated") != std::string::npos);
  CHECK(error_of([&] { functional::vjp([](const Tensor&) { return Tensor(); }, x, x); })
            .find("autograd::functional::vjp: fn returned an undefined tensor") != std::string::npos);
  const functional::MultiOutputFunction undefined_second = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0], Tensor()};
  };
  CHECK(error_of([&] { functional::jacobian(undefined_second, {x}); })
            .find("autograd::functional::jacobian: output 1 of fn is an undefined tensor") != std::string::npos);
  // An error inside fn names fn's own line, not the call's.
  const Tensor wrong = float64({1.0, 2.0}, {2});
  const int fn_line = __LINE__ + 1;
  const auto bad = [&](const Tensor& input) { return matmul(wrong, input); };
  const int call_line = __LINE__ + 1;
  message = error_of([&] { functional::jacobian(bad, x); });
  CHECK(names_line(message, fn_line));
  CHECK_FALSE(names_line(message, call_line));
}

}  // namespace test_autograd_functional
