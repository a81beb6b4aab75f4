// prod and cumsum: values against float64 references and exact expected values (NaN, +-inf, -0.0,
// empty tensors, integer and bool promotion to int64, keepdim, negative dims, the dtype argument),
// gradients against float64 central differences and closed forms with zero, one and two zeros in
// the input, a second derivative through the one-zero rule, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_prod_cumsum {

using namespace ember;
using ember::testing::doubles;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::names_line;
using ember::testing::values_of;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The gradient of sum(prod(x, dim) * weights) for a float64 leaf x.
std::vector<double> prod_gradient(const std::vector<double>& values, const Dims& sizes, std::optional<int64_t> dim) {
  const Tensor x = doubles(values, sizes).requires_grad_();
  const Tensor product = dim ? prod(x, *dim) : prod(x);
  product.backward(ones_like(product));
  return values_of(x.grad());
}

}  // namespace

TEST_CASE("prod over all dims and along one, with keepdim and negative dims, against float64 references") {
  const Tensor x64 = ember::testing::small_tensor({3, 4}, 11);
  const std::vector<double> v = values_of(x64);
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    INFO(dtype);
    const double tolerance = dtype == kFloat64 ? 1e-14 : dtype == kFloat32 ? 1e-6 : 2e-2;
    const Tensor x = to_dtype(x64, dtype);
    const std::vector<double> rounded = values_of(x);
    double all = 1.0;
    for (double value : rounded) all *= value;
    CHECK(prod(x).dtype() == dtype);
    CHECK(prod(x).dim() == 0);
    CHECK(std::abs(prod(x).item() - all) <= tolerance * std::abs(all));
    const Tensor rows = prod(x, -1, true);
    CHECK(rows.sizes() == Dims{3, 1});
    const Tensor columns = x.prod(0);
    CHECK(columns.sizes() == Dims{4});
    for (int64_t r = 0; r < 3; ++r) {
      double expected = 1.0;
      for (int64_t c = 0; c < 4; ++c) expected *= rounded[r * 4 + c];
      CHECK(std::abs(values_of(rows)[r] - expected) <= tolerance * std::abs(expected));
    }
    for (int64_t c = 0; c < 4; ++c) {
      double expected = 1.0;
      for (int64_t r = 0; r < 3; ++r) expected *= rounded[r * 4 + c];
      CHECK(std::abs(values_of(columns)[c] - expected) <= tolerance * std::abs(expected));
    }
  }
  (void)v;
  // A transposed (strided) input reads the same values.
  CHECK(values_of(prod(x64.t(), 1)) == values_of(prod(x64, 0)));
}

TEST_CASE("prod keeps NaN, infinities and the sign of zero, and the product of nothing is 1") {
  CHECK(std::isnan(prod(doubles({2.0, kNaN, 0.0}, {3})).item()));
  CHECK(std::isnan(prod(doubles({kInf, 0.0}, {2})).item()));  // inf * 0
  CHECK(prod(doubles({kInf, -2.0}, {2})).item() == -kInf);
  const double negative_zero = prod(doubles({-0.0, 3.0}, {2})).item();
  CHECK(negative_zero == 0.0);
  CHECK(std::signbit(negative_zero));
  CHECK(prod(zeros({0})).item() == 1.0);
  CHECK(values_of(prod(zeros({2, 0}), 1)) == std::vector<double>{1.0, 1.0});
  CHECK(prod(zeros({0, 3}), 1).sizes() == Dims{0});
  CHECK(prod(scalar_tensor(-4.0), -1).item() == -4.0);  // a 0-d tensor takes dim 0 and -1
}

TEST_CASE("prod of integers and bool is int64 (wrapping like PyTorch) and the dtype argument is the result's") {
  const Tensor ints = to_dtype(from_vector<int64_t>({2, 3, -4}), kInt32);
  CHECK(prod(ints).dtype() == kInt64);
  CHECK(prod(ints).item<int64_t>() == -24);
  CHECK(prod(to_dtype(from_vector<int64_t>({1, 1, 0}), kBool)).item<int64_t>() == 0);
  CHECK(prod(to_dtype(from_vector<int64_t>({1, 1}), kBool)).item<int64_t>() == 1);
  CHECK(prod(from_vector<int64_t>({int64_t{1} << 62, 4})).item<int64_t>() == 0);  // 2^64 wraps to 0
  CHECK(prod(from_vector<int64_t>({0, 3, 5, 7}, Dims{2, 2}), 1).to_vector<int64_t>() == std::vector<int64_t>{0, 35});
  const Tensor as_double = prod(ints, kFloat64);
  CHECK(as_double.dtype() == kFloat64);
  CHECK(as_double.item() == -24.0);
  CHECK(prod(ints, 0, false, kFloat32).dtype() == kFloat32);
  CHECK(ints.prod(kFloat64).item() == -24.0);
  // An integer dtype is the result's too, wrapping in it as PyTorch's: 65536^2 = 2^32 is 0 in int32.
  const Tensor large = to_dtype(from_vector<int64_t>({65536, 65536}), kInt32);
  CHECK(prod(large, kInt32).dtype() == kInt32);
  CHECK(prod(large, kInt32).item<int64_t>() == 0);
  CHECK(prod(large, 0, true, kInt32).sizes() == Dims{1});
  CHECK(prod(large, 0, true, kInt32).dtype() == kInt32);
  const Tensor running = cumsum(to_dtype(from_vector<int64_t>({2147483647, 1}), kInt32), 0, kInt32);
  CHECK(running.dtype() == kInt32);
  CHECK(running.to_vector<int32_t>() == std::vector<int32_t>{2147483647, -2147483647 - 1});
  CHECK(cumsum(from_vector<float>({1.5f, 2.5f}), 0, kInt32).to_vector<int32_t>() == std::vector<int32_t>{1, 3});
}

TEST_CASE("prod refuses a dim out of range, naming the op, the dim, the rank and the line") {
  const Tensor x = ones({2, 3});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)prod(x, 2); });
  CHECK(message.find("prod: dim 2 is out of range for a tensor of rank 2") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { (void)x.prod(-3, true); }).find("prod: dim -3 is out of range") != std::string::npos);
}

TEST_CASE("prod's gradient matches central differences without zeros, with one zero and with two") {
  // No zero, along a dim and over all dims, on a transposed view.
  gradcheck_leaves([](const std::vector<Tensor>& in) { return prod(in[0], 1); }, {leaf({3, 4}, 21)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return prod(in[0]); }, {leaf({2, 3}, 22)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return prod(in[0].t(), 0, true); }, {leaf({3, 4}, 23)});
  // Rows with no zero, one zero and two zeros: prod is a polynomial, so central differences are
  // exact across a zero.
  const std::vector<double> values = {0.5, -2.0, 1.5, 0.0, 3.0, -1.0, 0.0, 2.0, 0.0};
  for (int64_t dim : {int64_t{1}, int64_t{-1}}) {
    gradcheck_leaves([dim](const std::vector<Tensor>& in) { return prod(in[0], dim); },
              {doubles(values, {3, 3}).requires_grad_()});
  }
  gradcheck_leaves([](const std::vector<Tensor>& in) { return prod(in[0], 0); },
                   {doubles(values, {3, 3}).requires_grad_()});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return prod(in[0]); },
            {doubles({2.0, 0.0, -3.0}, {3}).requires_grad_()});
}

TEST_CASE("prod's gradient with zeros is the product of the others: exact closed forms") {
  // No zero: prod / x_i.
  CHECK(prod_gradient({2.0, -3.0, 4.0}, {3}, {}) == std::vector<double>{-12.0, 8.0, -6.0});
  // One zero: the others' product at the zero, 0 elsewhere (never 0 / 0).
  CHECK(prod_gradient({2.0, 0.0, 4.0}, {3}, {}) == std::vector<double>{0.0, 8.0, 0.0});
  // Two zeros: 0 everywhere.
  CHECK(prod_gradient({0.0, 5.0, 0.0}, {3}, {}) == std::vector<double>{0.0, 0.0, 0.0});
  // Per row: none, one, two.
  CHECK(prod_gradient({1.0, 2.0, 3.0, 0.0, 2.0, 5.0, 0.0, 0.0, 7.0}, {3, 3}, 1) ==
        std::vector<double>{6.0, 3.0, 2.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0});
  // -0.0 is a zero too.
  CHECK(prod_gradient({-0.0, 3.0}, {2}, {}) == std::vector<double>{3.0, 0.0});
}

TEST_CASE("prod's second derivative through a zero is the product of the remaining elements") {
  // f = x0 x1 x2 at (0, 2, 3): df/dx1 = x0 x2 = 0, and d/dx0 of it is x2 = 3.
  const Tensor x = doubles({0.0, 2.0, 3.0}, {3}).requires_grad_();
  const std::vector<Tensor> first = autograd::grad({prod(x)}, {x}, {}, std::nullopt, /*create_graph=*/true);
  CHECK(values_of(first[0]) == std::vector<double>{6.0, 0.0, 0.0});
  const std::vector<Tensor> second = autograd::grad({first[0].slice(0, 1, 2).sum()}, {x});
  CHECK(values_of(second[0]) == std::vector<double>{3.0, 0.0, 0.0});
  const std::vector<Tensor> at_zero = autograd::grad({prod(x)}, {x}, {}, std::nullopt, true);
  const std::vector<Tensor> mixed = autograd::grad({at_zero[0].slice(0, 0, 1).sum()}, {x});
  CHECK(values_of(mixed[0]) == std::vector<double>{0.0, 3.0, 2.0});  // d(x1 x2)
}

TEST_CASE("prod's Hessian with two or more zeros is PyTorch's exact one") {
  // f = x0 x1 x2 at (0, 0, 4): the only nonzero second derivatives are d2f/dx0 dx1 = x2 = 4.
  const auto hessian_of = [](const std::vector<double>& values) {
    return values_of(autograd::functional::hessian([](const Tensor& x) { return prod(x); },
                                                   doubles(values, {static_cast<int64_t>(values.size())})));
  };
  CHECK(hessian_of({0.0, 0.0, 4.0}) == std::vector<double>{0, 4, 0, 4, 0, 0, 0, 0, 0});
  CHECK(hessian_of({3.0, 0.0, 0.0}) == std::vector<double>{0, 0, 0, 0, 0, 3, 0, 3, 0});
  // Three zeros: every second derivative keeps a zero factor.
  CHECK(hessian_of({0.0, 0.0, 0.0, 5.0}) == std::vector<double>(16, 0.0));
  // One zero (and none) against the closed form d2f/dxi dxj = prod of the rest.
  CHECK(hessian_of({0.0, 2.0, 3.0}) == std::vector<double>{0, 3, 2, 3, 0, 0, 2, 0, 0});
  const std::vector<double> no_zero = hessian_of({1.0, 2.0, 3.0});
  const std::vector<double> expected = {0, 3, 2, 3, 0, 1, 2, 1, 0};
  for (size_t i = 0; i < expected.size(); ++i) CHECK(std::abs(no_zero[i] - expected[i]) <= 1e-15);
}

TEST_CASE("prod's gradient beside a zero is 0 even when the other elements' product overflows") {
  // PyTorch's running products give 0 there; others / x_i = inf times the zero would be NaN.
  const auto gradient_of = [](const std::vector<float>& values) {
    const Tensor x = from_vector<float>(values).requires_grad_();
    prod(x).backward();
    return values_of(x.grad());
  };
  CHECK(gradient_of({1e20f, 1e20f, 0.0f}) == std::vector<double>{0, 0, kInf});
  CHECK(gradient_of({3.0f, 1e30f, 1e10f, 0.0f}) == std::vector<double>{0, 0, 0, kInf});
  CHECK(gradient_of({std::numeric_limits<float>::infinity(), 0.0f}) == std::vector<double>{0, kInf});
  // Without a zero an overflowing product's gradient stays prod / x_i = inf, as PyTorch's.
  CHECK(gradient_of({1e20f, 1e20f}) == std::vector<double>{kInf, kInf});
}

TEST_CASE("cumsum along a dim, negative dims and strided inputs, against float64 references") {
  const Tensor x64 = ember::testing::small_tensor({3, 4}, 31);
  const std::vector<double> v = values_of(x64);
  for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
    INFO(dtype);
    const double tolerance = dtype == kFloat64 ? 1e-14 : dtype == kFloat32 ? 1e-6 : 2e-2;
    const Tensor x = to_dtype(x64, dtype);
    const std::vector<double> rounded = values_of(x);
    const Tensor along_rows = cumsum(x, -1);
    const Tensor along_columns = x.cumsum(0);
    CHECK(along_rows.dtype() == dtype);
    CHECK(along_rows.sizes() == Dims{3, 4});
    for (int64_t r = 0; r < 3; ++r) {
      double running = 0.0;
      for (int64_t c = 0; c < 4; ++c) {
        running += rounded[r * 4 + c];
        CHECK(std::abs(values_of(along_rows)[r * 4 + c] - running) <= tolerance * (1.0 + std::abs(running)));
      }
    }
    for (int64_t c = 0; c < 4; ++c) {
      double running = 0.0;
      for (int64_t r = 0; r < 3; ++r) {
        running += rounded[r * 4 + c];
        CHECK(std::abs(values_of(along_columns)[r * 4 + c] - running) <= tolerance * (1.0 + std::abs(running)));
      }
    }
  }
  CHECK(values_of(cumsum(x64.t(), 1)) == values_of(cumsum(x64, 0).t()));
  (void)v;
}

TEST_CASE("cumsum: NaN and infinities propagate, integers and bool become int64, empty and 0-d inputs") {
  const std::vector<double> with_nan = values_of(cumsum(doubles({1.0, kNaN, 2.0}, {3}), 0));
  CHECK(with_nan[0] == 1.0);
  CHECK(std::isnan(with_nan[1]));
  CHECK(std::isnan(with_nan[2]));
  const std::vector<double> infinite = values_of(cumsum(doubles({kInf, 1.0, -kInf}, {3}), 0));
  CHECK(infinite[0] == kInf);
  CHECK(infinite[1] == kInf);
  CHECK(std::isnan(infinite[2]));
  // The running sum starts from +0.0, as PyTorch's: +0.0 + -0.0 is +0.0.
  CHECK(!std::signbit(values_of(cumsum(doubles({-0.0}, {1}), 0))[0]));
  const Tensor ints = to_dtype(from_vector<int64_t>({3, -1, 4, 1}, Dims{2, 2}), kInt32);
  CHECK(cumsum(ints, 1).dtype() == kInt64);
  CHECK(cumsum(ints, 1).to_vector<int64_t>() == std::vector<int64_t>{3, 2, 4, 5});
  CHECK(cumsum(ints, 0).to_vector<int64_t>() == std::vector<int64_t>{3, -1, 7, 0});
  CHECK(cumsum(to_dtype(from_vector<int64_t>({1, 0, 1}), kBool), 0).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 1, 2});
  const int64_t largest = std::numeric_limits<int64_t>::max();
  CHECK(cumsum(from_vector<int64_t>({largest, 1}), 0).to_vector<int64_t>() ==
        std::vector<int64_t>{largest, std::numeric_limits<int64_t>::min()});  // wraps like PyTorch
  CHECK(cumsum(ints, 1, kFloat64).dtype() == kFloat64);
  CHECK(values_of(cumsum(ints, 1, kFloat64)) == std::vector<double>{3.0, 2.0, 4.0, 5.0});
  CHECK(cumsum(zeros({0, 3}), 1).sizes() == Dims{0, 3});
  CHECK(cumsum(zeros({2, 0}), 1).sizes() == Dims{2, 0});
  CHECK(cumsum(scalar_tensor(2.5), 0).item() == 2.5);
  CHECK(cumsum(scalar_tensor(2.5), -1).dim() == 0);
}

TEST_CASE("cumsum refuses a dim out of range, naming the op, the dim, the rank and the line") {
  const Tensor x = ones({2, 3});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)cumsum(x, 2); });
  CHECK(message.find("cumsum: dim 2 is out of range for a tensor of rank 2") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { (void)x.cumsum(-3); }).find("cumsum: dim -3 is out of range") != std::string::npos);
}

TEST_CASE("cumsum's gradient (the reversed running sum) matches central differences, to second order") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumsum(in[0], 1); }, {leaf({3, 4}, 41)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumsum(in[0], -2); }, {leaf({3, 4}, 42)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumsum(in[0].t(), 0); }, {leaf({3, 4}, 43)});
  // Closed form: d/dx_i of sum_j w_j cumsum(x)_j = sum_{j >= i} w_j.
  const Tensor x = doubles({1.0, 2.0, 3.0}, {3}).requires_grad_();
  cumsum(x, 0).backward(doubles({1.0, 10.0, 100.0}, {3}));
  CHECK(values_of(x.grad()) == std::vector<double>{111.0, 110.0, 100.0});
  // The gradient of cumsum(x)^2 is linear in x through the reversed running sum: its own gradient.
  const Tensor y = doubles({1.0, -2.0}, {2}).requires_grad_();
  const Tensor out = cumsum(y, 0);
  const std::vector<Tensor> first = autograd::grad({mul(out, out).sum()}, {y}, {}, std::nullopt, true);
  CHECK(values_of(first[0]) == std::vector<double>{0.0, -2.0});  // 2 (y0) + 2 (y0 + y1), 2 (y0 + y1)
  const std::vector<Tensor> second = autograd::grad({first[0].sum()}, {y});
  CHECK(values_of(second[0]) == std::vector<double>{6.0, 4.0});  // d(6 y0 + 4 y1)
}

}  // namespace test_prod_cumsum
