// cumprod: values against float64 running products written here, NaN, infinities and zeros,
// integer and bool promotion to int64 (wrapping), the dtype argument, negative dims, 0-d and empty
// inputs, the errors; gradients against central differences and against the closed form
// sum_{j >= k} g_j prod_{i <= j, i != k} x_i with one, two and three zeros, and the Hessian
// against its closed form, so the gradient's own derivative is exact across zeros.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_cumprod {

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

// prod_{i <= j, i not in skipped} x_i.
double product_up_to(const std::vector<double>& x, size_t j, std::initializer_list<size_t> skipped) {
  double product = 1.0;
  for (size_t i = 0; i <= j; ++i) {
    bool skip = false;
    for (size_t s : skipped) skip = skip || s == i;
    if (!skip) product *= x[i];
  }
  return product;
}

// d(sum_j g_j cumprod(x)_j) / dx_k.
std::vector<double> closed_form_gradient(const std::vector<double>& x, const std::vector<double>& g) {
  std::vector<double> gradient(x.size(), 0.0);
  for (size_t k = 0; k < x.size(); ++k)
    for (size_t j = k; j < x.size(); ++j) gradient[k] += g[j] * product_up_to(x, j, {k});
  return gradient;
}

// d2(sum_j w_j cumprod(x)_j) / dx_a dx_b: 0 on the diagonal (each x_i enters a product once).
std::vector<double> closed_form_hessian(const std::vector<double>& x, const std::vector<double>& w) {
  const size_t n = x.size();
  std::vector<double> hessian(n * n, 0.0);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b)
      if (a != b)
        for (size_t j = std::max(a, b); j < n; ++j) hessian[a * n + b] += w[j] * product_up_to(x, j, {a, b});
  return hessian;
}

}  // namespace

TEST_CASE("cumprod along a dim, negative dims and strided inputs, against float64 running products") {
  const Tensor x64 = ember::testing::small_tensor({3, 5}, 51);
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    INFO(dtype);
    const double tolerance = dtype == kFloat64 ? 1e-14 : dtype == kFloat32 ? 1e-6 : 1e-2;
    const Tensor x = to_dtype(x64, dtype);
    const std::vector<double> rounded = values_of(x);
    const Tensor along_rows = cumprod(x, -1);
    const Tensor along_columns = x.cumprod(0);
    CHECK(along_rows.dtype() == dtype);
    CHECK(along_rows.sizes() == Dims{3, 5});
    for (int64_t r = 0; r < 3; ++r) {
      double running = 1.0;
      for (int64_t c = 0; c < 5; ++c) {
        running *= rounded[r * 5 + c];
        CHECK(std::abs(values_of(along_rows)[r * 5 + c] - running) <= tolerance * std::abs(running) + 1e-300);
      }
    }
    for (int64_t c = 0; c < 5; ++c) {
      double running = 1.0;
      for (int64_t r = 0; r < 3; ++r) {
        running *= rounded[r * 5 + c];
        CHECK(std::abs(values_of(along_columns)[r * 5 + c] - running) <= tolerance * std::abs(running) + 1e-300);
      }
    }
  }
  CHECK(values_of(cumprod(x64.t(), 1)) == values_of(cumprod(x64, 0).t()));
}

TEST_CASE("cumprod: zeros stay, NaN and infinities propagate, integers and bool become int64, empty and 0-d") {
  CHECK(values_of(cumprod(doubles({2.0, 0.0, 3.0, -1.0}), 0)) == std::vector<double>{2.0, 0.0, 0.0, -0.0});
  CHECK(std::signbit(values_of(cumprod(doubles({2.0, 0.0, 3.0, -1.0}), 0))[3]));  // 0 * -1 is -0.0
  const std::vector<double> with_nan = values_of(cumprod(doubles({2.0, kNaN, 0.0}), 0));
  CHECK(with_nan[0] == 2.0);
  CHECK(std::isnan(with_nan[1]));
  CHECK(std::isnan(with_nan[2]));
  const std::vector<double> infinite = values_of(cumprod(doubles({kInf, -2.0, 0.0}), 0));
  CHECK(infinite[0] == kInf);
  CHECK(infinite[1] == -kInf);
  CHECK(std::isnan(infinite[2]));  // inf * 0
  // float32 accumulates in double, as PyTorch's CPU kernel: 1e30 * 1e30 * 1e-30 is 1e30, not inf.
  CHECK(values_of(cumprod(from_vector<float>({1e30f, 1e30f, 1e-30f}), 0))[2] == static_cast<double>(1e30f));
  const Tensor ints = to_dtype(from_vector<int64_t>({3, -1, 4, 2}, Dims{2, 2}), kInt32);
  CHECK(cumprod(ints, 1).dtype() == kInt64);
  CHECK(cumprod(ints, 1).to_vector<int64_t>() == std::vector<int64_t>{3, -3, 4, 8});
  CHECK(cumprod(ints, -2).to_vector<int64_t>() == std::vector<int64_t>{3, -1, 12, -2});
  CHECK(cumprod(to_dtype(from_vector<int64_t>({1, 1, 0, 1}), kBool), 0).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 1, 0, 0});
  CHECK(cumprod(from_vector<int64_t>({int64_t{1} << 62, 4, 3}), 0).to_vector<int64_t>() ==
        std::vector<int64_t>{int64_t{1} << 62, 0, 0});  // 2^64 wraps to 0, as PyTorch's
  // The dtype argument converts first and is the result's dtype; int32 wraps in int32.
  CHECK(cumprod(ints, 1, kFloat64).dtype() == kFloat64);
  CHECK(values_of(cumprod(ints, 1, kFloat64)) == std::vector<double>{3.0, -3.0, 4.0, 8.0});
  const Tensor large = cumprod(to_dtype(from_vector<int64_t>({65536, 65536, 3}), kInt32), 0, kInt32);
  CHECK(large.dtype() == kInt32);
  CHECK(large.to_vector<int32_t>() == std::vector<int32_t>{65536, 0, 0});
  CHECK(cumprod(from_vector<float>({1.5f, 2.5f}), 0, kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(cumprod(zeros({0, 3}), 1).sizes() == Dims{0, 3});
  CHECK(cumprod(zeros({2, 0}), 1).sizes() == Dims{2, 0});
  CHECK(cumprod(scalar_tensor(-2.5), 0).item() == -2.5);
  CHECK(cumprod(scalar_tensor(-2.5), -1).dim() == 0);
}

TEST_CASE("cumprod refuses a dim out of range, naming the op, the dim, the rank and the line") {
  const Tensor x = ones({2, 3});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)cumprod(x, 2); });
  CHECK(message.find("cumprod: dim 2 is out of range for a tensor of rank 2") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK_THROWS_WITH_AS((void)x.cumprod(-3), doctest::Contains("cumprod: dim -3 is out of range"), Error);
}

TEST_CASE("cumprod's gradient matches central differences without zeros and with one, two and three zeros") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumprod(in[0], 1); }, {leaf({3, 4}, 61)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumprod(in[0], -2); }, {leaf({3, 4}, 62)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumprod(in[0].t(), 0); }, {leaf({3, 4}, 63)});
  // Rows without a zero, with one (first, middle, last), two and three: cumprod is a polynomial,
  // so central differences are exact across a zero.
  const std::vector<double> values = {0.5, -2.0, 1.5, 3.0, 0.7,   //
                                      0.0, 2.0, -1.5, 0.5, 3.0,   //
                                      1.5, 2.0, 0.0, -0.5, 3.0,   //
                                      1.5, 2.0, -0.5, 3.0, 0.0,   //
                                      2.0, 0.0, -1.5, 0.0, 3.0,   //
                                      0.0, 1.5, 0.0, 2.0, 0.0};
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumprod(in[0], 1); },
                   {doubles(values, {6, 5}).requires_grad_()});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumprod(in[0], 0); },
                   {doubles(values, {6, 5}).requires_grad_()});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumprod(in[0].t(), -1); },
            {doubles(values, {6, 5}).requires_grad_()});
}

TEST_CASE("cumprod's gradient with zeros equals the closed form exactly, never 0 / 0") {
  for (const std::vector<double>& x : {std::vector<double>{2.0, -3.0, 4.0, 0.5}, std::vector<double>{2.0, 0.0, 3.0, 4.0},
                                       std::vector<double>{0.0, 2.0, 0.0, 3.0}, std::vector<double>{5.0, 0.0, 0.0, 0.0},
                                       std::vector<double>{-0.0, 3.0, 2.0, -1.0}}) {
    const std::vector<double> g = {1.0, 10.0, 100.0, 1000.0};
    const Tensor leaf_x = doubles(x).requires_grad_();
    cumprod(leaf_x, 0).backward(doubles(g));
    const std::vector<double> actual = values_of(leaf_x.grad());
    const std::vector<double> expected = closed_form_gradient(x, g);
    for (size_t k = 0; k < x.size(); ++k) {
      INFO("x ", x[0], " ", x[1], " ", x[2], " ", x[3], ", element ", k);
      CHECK(actual[k] == doctest::Approx(expected[k]).epsilon(1e-14));
    }
  }
  // By hand: x = (2, 0, 3, 4), g = 1: d/dx1 = x0 + x0 x2 + x0 x2 x3 = 2 + 6 + 24.
  const Tensor x = doubles({2.0, 0.0, 3.0, 4.0}).requires_grad_();
  cumprod(x, 0).sum().backward();
  CHECK(values_of(x.grad()) == std::vector<double>{1.0, 32.0, 0.0, 0.0});
}

TEST_CASE("cumprod's Hessian equals its closed form without zeros and with one, two and three zeros") {
  const std::vector<double> w = {0.5, -1.0, 2.0, 1.5, -0.25};
  for (const std::vector<double>& x :
       {std::vector<double>{1.5, -2.0, 0.5, 3.0, 0.75}, std::vector<double>{1.5, 0.0, 0.5, 3.0, -2.0},
        std::vector<double>{0.0, 2.0, -1.0, 3.0, 0.5}, std::vector<double>{1.5, 0.0, 0.5, 0.0, -2.0},
        std::vector<double>{0.0, 0.0, 2.0, 3.0, 0.5}, std::vector<double>{0.0, 1.5, 0.0, 2.0, 0.0},
        std::vector<double>{2.0, 0.5, 1.5, -1.0, 0.0}}) {
    const Tensor weights = doubles(w);
    const std::vector<double> actual = values_of(autograd::functional::hessian(
        [&](const Tensor& input) { return sum(mul(cumprod(input, 0), weights)); }, doubles(x)));
    const std::vector<double> expected = closed_form_hessian(x, w);
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("x ", x[0], " ", x[1], " ", x[2], " ", x[3], " ", x[4], ", entry ", i / 5, ",", i % 5);
      CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-13));
    }
  }
}

TEST_CASE("cumprod's gradient of a 0-d and of an empty input, and with a length-1 dim") {
  const Tensor scalar = scalar_tensor(-3.0, {.dtype = kFloat64}).requires_grad_();
  mul(cumprod(scalar, 0), 2.0).backward();
  CHECK(scalar.grad().item() == 2.0);
  const Tensor empty = zeros({2, 0}, {.dtype = kFloat64}).requires_grad_();
  sum(cumprod(empty, 1)).backward();
  CHECK(empty.grad().sizes() == Dims{2, 0});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cumprod(in[0], 1); }, {leaf({3, 1}, 64)});
}

TEST_CASE("cumprod runs in float32 under autocast, as on PyTorch's list, and cummax, cummin, logcumsumexp do not") {
  const Tensor x = to_dtype(ember::testing::small_tensor({3, 4}, 65), kBFloat16);
  AutocastGuard autocast(kBFloat16);
  const Tensor product = cumprod(x, 1);
  CHECK(product.dtype() == kFloat32);
  CHECK(values_of(product) == values_of(cumprod(to_dtype(x, kFloat32), 1)));
  CHECK(std::get<0>(cummax(x, 1)).dtype() == kBFloat16);
  CHECK(std::get<0>(cummin(x, 1)).dtype() == kBFloat16);
  CHECK(logcumsumexp(x, 1).dtype() == kBFloat16);
}

}  // namespace test_cumprod
