// linalg::vecdot, matrix_exp, tensorinv and tensorsolve (runtime/linalg_composites.h) against float64
// references written here: plain loops, a long double Taylor series of e^A, and closed forms (rotation
// generators, nilpotent and diagonal matrices); gradients by central differences; error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/linalg_composites.h"

namespace test_linalg_composites {

using namespace ember;
using namespace ember::testing;

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

// e^A of one n x n row-major matrix by 300 terms of its Taylor series in long double, no scaling:
// for the norms used here (below 8) the terms fall under 1e-30 long before the end.
std::vector<double> exp_reference(const std::vector<double>& a, int n) {
  std::vector<long double> term(n * n, 0.0L), total(n * n, 0.0L);
  for (int i = 0; i < n; ++i) term[i * n + i] = total[i * n + i] = 1.0L;
  for (int k = 1; k <= 300; ++k) {
    std::vector<long double> next(n * n, 0.0L);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        for (int m = 0; m < n; ++m) next[i * n + j] += term[i * n + m] * a[m * n + j] / k;
    term = next;
    for (int i = 0; i < n * n; ++i) total[i] += term[i];
  }
  return std::vector<double>(total.begin(), total.end());
}

TEST_CASE("vecdot sums x * y over dim, broadcasting") {
  const Tensor x = small_tensor({2, 3}, 1), y = small_tensor({3}, 2);
  const std::vector<double> xv = values_of(x), yv = values_of(y);
  std::vector<double> expected(2, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) expected[i] += xv[i * 3 + k] * yv[k];
  check_close(values_of(linalg::vecdot(x, y)), expected, 1e-15);
  std::vector<double> along_rows(3, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) along_rows[k] += xv[i * 3 + k] * xv[i * 3 + k];
  check_close(values_of(linalg::vecdot(x, x, 0)), along_rows, 1e-15);
  gradcheck_leaves([](const std::vector<Tensor>& t) { return linalg::vecdot(t[0], t[1], -1); },
                   {leaf({2, 3}, 3), leaf({3}, 4)});
}

TEST_CASE("matrix_exp matches a long Taylor series for small and large norms, batched") {
  for (double scale : {0.3, 2.5, 7.0}) {
    INFO("scale " << scale);
    const Tensor A = mul(small_tensor({2, 3, 3}, 5), scale);
    const std::vector<double> values = values_of(A), result = values_of(linalg::matrix_exp(A));
    for (int b = 0; b < 2; ++b) {
      const std::vector<double> expected = exp_reference({values.begin() + b * 9, values.begin() + b * 9 + 9}, 3);
      check_close({result.begin() + b * 9, result.begin() + b * 9 + 9}, expected, 1e-12);
    }
  }
  const Tensor single = small_tensor({3, 3}, 6, kFloat32);
  check_close(values_of(linalg::matrix_exp(single)), exp_reference(values_of(single), 3), 1e-5);
}

TEST_CASE("matrix_exp of rotation generators, nilpotent and diagonal matrices is their closed form") {
  const double t = 2.0;  // [[0, -t], [t, 0]] generates the rotation by t radians
  check_close(values_of(linalg::matrix_exp(doubles({0.0, -t, t, 0.0}, {2, 2}))),
              {std::cos(t), -std::sin(t), std::sin(t), std::cos(t)}, 1e-14);
  // N strictly upper triangular: N^3 = 0, so e^N = I + N + N^2 / 2 exactly.
  const double a = 3.0, b = -5.0, c = 4.0;
  check_close(values_of(linalg::matrix_exp(doubles({0, a, b, 0, 0, c, 0, 0, 0}, {3, 3}))),
              {1, a, b + a * c / 2, 0, 1, c, 0, 0, 1}, 1e-14);
  check_close(values_of(linalg::matrix_exp(doubles({-3.0, 0.0, 0.0, 1.5}, {2, 2}))),
              {std::exp(-3.0), 0.0, 0.0, std::exp(1.5)}, 1e-14);
  CHECK(linalg::matrix_exp(zeros({0, 2, 2}, dtype_options(kFloat64))).sizes() == Dims{0, 2, 2});
}

TEST_CASE("matrix_exp is differentiable through its ops") {
  gradcheck_leaves([](const std::vector<Tensor>& t) { return linalg::matrix_exp(t[0]); }, {leaf({2, 3, 3}, 7)});
  gradcheck_leaves([](const std::vector<Tensor>& t) { return linalg::matrix_exp(mul(t[0], 4.0)); }, {leaf({3, 3}, 8)},
                   1e-5);
  const int line = __LINE__ + 1;
  check_refusal(error_of([] { linalg::matrix_exp(small_tensor({2, 3}, 1)); }), "linalg.matrix_exp: A must be", line);
}

TEST_CASE("tensorinv inverts a as an operator: tensordot(tensorinv(a), a, ind) is the identity") {
  const Tensor a = add(small_tensor({4, 2, 8}, 9), mul(reshape(eye(8, dtype_options(kFloat64)), {4, 2, 8}), 3.0));
  const Tensor inverse = linalg::tensorinv(a, 2);
  CHECK(inverse.sizes() == Dims{8, 4, 2});
  const std::vector<double> av = values_of(a), iv = values_of(inverse);
  std::vector<double> product(64, 0.0), identity(64, 0.0);
  for (int i = 0; i < 8; ++i) {
    identity[i * 8 + i] = 1.0;
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 8; ++k) product[i * 8 + j] += iv[i * 8 + k] * av[k * 8 + j];
  }
  check_close(product, identity, 1e-13);
  gradcheck_leaves([](const std::vector<Tensor>& t) { return linalg::tensorinv(add(t[0], 2.0), 1); },
                   {leaf({4, 2, 2}, 10)});
  const int line = __LINE__ + 1;
  check_refusal(error_of([&] { linalg::tensorinv(a, 0); }), "linalg.tensorinv: Expected a strictly positive", line);
  const int shape_line = __LINE__ + 1;
  check_refusal(error_of([&] { linalg::tensorinv(a, 1); }), "but got 16 != 4", shape_line);
}

TEST_CASE("tensorsolve finds x with tensordot(a, x, x.dim()) == b, dims moved to the end") {
  const Tensor a = add(small_tensor({2, 3, 6}, 11), mul(reshape(eye(6, dtype_options(kFloat64)), {2, 3, 6}), 3.0));
  const Tensor b = small_tensor({2, 3}, 12);
  const Tensor x = linalg::tensorsolve(a, b);
  CHECK(x.sizes() == Dims{6});
  const std::vector<double> av = values_of(a), xv = values_of(x);
  std::vector<double> product(6, 0.0);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) product[i] += av[i * 6 + j] * xv[j];
  check_close(product, values_of(b), 1e-13);
  const Tensor moved = a.movedim(2, 0).contiguous();  // [6, 2, 3]: dims {0} moves it back
  check_close(values_of(linalg::tensorsolve(moved, b, Dims{0})), xv, 1e-13);
  gradcheck_leaves([](const std::vector<Tensor>& t) { return linalg::tensorsolve(add(t[0], 2.0), t[1]); },
                   {leaf({2, 2, 4}, 13), leaf({2, 2}, 14)});
  const int line = __LINE__ + 1;
  check_refusal(error_of([&] { linalg::tensorsolve(a, small_tensor({2}, 1)); }), "linalg.tensorsolve: Expected", line);
}

}  // namespace test_linalg_composites
