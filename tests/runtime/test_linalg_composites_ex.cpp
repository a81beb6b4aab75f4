// linalg::inv_ex, cholesky_ex and solve_ex (runtime/linalg_composites.h): info of the batch shape with
// LAPACK's 1-based index where a matrix fails, NaN results there, correct results elsewhere (checked by
// plain-loop products), gradients through the good matrices, and check_errors = true throwing.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/linalg_composites.h"

namespace test_linalg_composites_ex {

using namespace ember;
using namespace ember::testing;

// Row-major 2 x 2 product of two matrices stored at a and b.
std::vector<double> product_2x2(const double* a, const double* b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

void check_all_nan(const std::vector<double>& values) {
  for (double value : values) CHECK(std::isnan(value));
}

// Batch [3, 2, 2]: invertible, singular at U's 2nd pivot (rows proportional), singular at the 1st (zero).
const std::vector<double> kMatrices{2.0, 1.0, -1.0, 3.0, 1.0, 2.0, 2.0, 4.0, 0.0, 0.0, 0.0, 0.0};

TEST_CASE("inv_ex reports singular matrices in info instead of throwing") {
  const Tensor A = doubles(kMatrices, {3, 2, 2});
  const auto [inverse, info] = linalg::inv_ex(A);
  CHECK(info.dtype() == kInt32);
  CHECK(info.sizes() == Dims{3});
  CHECK(values_of(info) == std::vector<double>{0.0, 2.0, 1.0});
  const std::vector<double> values = values_of(inverse);
  check_close(product_2x2(kMatrices.data(), values.data()), {1.0, 0.0, 0.0, 1.0}, 1e-15);
  check_all_nan({values.begin() + 4, values.end()});
  gradcheck_leaves([](const std::vector<Tensor>& t) { return std::get<0>(linalg::inv_ex(add(t[0], 2.0))); },
                   {leaf({2, 2}, 1)});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { linalg::inv_ex(A, /*check_errors=*/true); });
  CHECK(message.find("singular") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(values_of(std::get<1>(linalg::inv_ex(A.narrow(0, 0, 1), true))) == std::vector<double>{0.0});
}

TEST_CASE("solve_ex solves the good matrices for vector and matrix right-hand sides") {
  const Tensor A = doubles(kMatrices, {3, 2, 2});
  const Tensor vector = doubles({1.0, -2.0});
  const auto [x, info] = linalg::solve_ex(A, vector);
  CHECK(x.sizes() == Dims{3, 2});
  CHECK(values_of(info) == std::vector<double>{0.0, 2.0, 1.0});
  const std::vector<double> xv = values_of(x);
  check_close({kMatrices[0] * xv[0] + kMatrices[1] * xv[1], kMatrices[2] * xv[0] + kMatrices[3] * xv[1]}, {1.0, -2.0},
              1e-15);
  check_all_nan({xv.begin() + 2, xv.end()});
  const Tensor B = small_tensor({3, 2, 2}, 2);
  const auto [X, matrix_info] = linalg::solve_ex(A, B);
  const std::vector<double> Xv = values_of(X), Bv = values_of(B);
  check_close(product_2x2(kMatrices.data(), Xv.data()), {Bv.begin(), Bv.begin() + 4}, 1e-14);
  check_all_nan({Xv.begin() + 4, Xv.end()});
  gradcheck_leaves([](const std::vector<Tensor>& t) { return std::get<0>(linalg::solve_ex(add(t[0], 2.0), t[1])); },
                   {leaf({2, 2}, 3), leaf({2, 3}, 4)});
  const int line = __LINE__ + 1;
  check_refusal(error_of([&] { linalg::solve_ex(A, B, true, true); }), "singular", line);
}

TEST_CASE("cholesky_ex names the first leading minor that is not positive-definite") {
  // Positive-definite; not at order 2 (det 1 - 4 < 0); not at order 1 (-1); NaN at order 1.
  const double nan = std::nan("");
  const Tensor A =
      doubles({4.0, 2.0, 2.0, 3.0, 1.0, 2.0, 2.0, 1.0, -1.0, 0.0, 0.0, 1.0, nan, 0.0, 0.0, 1.0}, {4, 2, 2});
  const auto [L, info] = linalg::cholesky_ex(A);
  CHECK(info.dtype() == kInt32);
  CHECK(values_of(info) == std::vector<double>{0.0, 2.0, 1.0, 1.0});
  const std::vector<double> Lv = values_of(L);
  const std::vector<double> L0{Lv[0], Lv[1], Lv[2], Lv[3]}, L0t{Lv[0], Lv[2], Lv[1], Lv[3]};
  CHECK(Lv[1] == 0.0);
  check_close(product_2x2(L0.data(), L0t.data()), {4.0, 2.0, 2.0, 3.0}, 1e-15);
  check_all_nan({Lv.begin() + 4, Lv.end()});
  // Only the lower triangle is read: an upper one that is not symmetric changes nothing.
  const Tensor lower_only = doubles({4.0, 99.0, 2.0, 3.0}, {2, 2});
  CHECK(values_of(std::get<1>(linalg::cholesky_ex(lower_only))) == std::vector<double>{0.0});
  const auto [U, upper_info] = linalg::cholesky_ex(A, /*upper=*/true);
  CHECK(values_of(U)[2] == 0.0);
  gradcheck_leaves(
      [](const std::vector<Tensor>& t) {
        const Tensor spd = add(matmul(t[0], t[0].transpose(0, 1)), mul(eye(3, dtype_options(kFloat64)), 2.0));
        return std::get<0>(linalg::cholesky_ex(spd));
      },
      {leaf({3, 3}, 5)});
  const int line = __LINE__ + 1;
  check_refusal(error_of([&] { linalg::cholesky_ex(A, false, true); }), "positive-definite", line);
  const Tensor not_square = small_tensor({2, 3}, 1);
  const int shape_line = __LINE__ + 1;
  check_refusal(error_of([&] { linalg::cholesky_ex(not_square); }), "linalg.cholesky_ex: A must be", shape_line);
}

}  // namespace test_linalg_composites_ex
