// linalg.cholesky, solve_triangular, cholesky_solve and cholesky_inverse on the CPU against
// float64 residuals, and the errors of the whole solve family (torch's words, batch elements,
// the user's line).
#include <doctest/doctest.h>

#include "error_of.h"
#include "linalg_solve_test_util.h"
#include "runtime/ops/registry.h"

namespace test_linalg_cholesky {

using namespace ember;
using namespace ember::linalg_test;
using ember::testing::error_of;

TEST_CASE("linalg.cholesky: L L^T = A with L lower, and upper = true gives U = L^T") {
  const Tensor a = positive_definite({3, 4, 4}, 1);
  const Tensor l = linalg::cholesky(a);
  CHECK(max_difference(matmul(l, transpose(l, 1, 2)), a) < 1e-12);
  CHECK(max_difference(l, tril(l)) == 0.0);
  const Tensor u = linalg::cholesky(a, /*upper=*/true);
  CHECK(max_difference(u, transpose(l, 1, 2)) == 0.0);
  // Only the lower triangle is read: garbage above the diagonal changes nothing.
  const Tensor garbled = add(a, triu(small_tensor({3, 4, 4}, 2), 1));
  CHECK(max_difference(linalg::cholesky(garbled), l) == 0.0);
  const Tensor l32 = linalg::cholesky(a.to(kFloat32));
  CHECK(l32.dtype() == kFloat32);
  CHECK(max_difference(l32, l) < 1e-5);
}

TEST_CASE("linalg.solve_triangular: every upper, left and unitriangular combination solves its triangle") {
  const Tensor a = well_conditioned({2, 4, 4}, 10);
  const Tensor identity = eye(4, {.dtype = kFloat64});
  const Tensor b_left = small_tensor({2, 4, 3}, 11), b_right = small_tensor({2, 3, 4}, 12);
  for (const bool upper : {false, true})
    for (const bool left : {false, true})
      for (const bool unit : {false, true}) {
        INFO("upper " << upper << " left " << left << " unitriangular " << unit);
        Tensor triangle = upper ? triu(a, unit ? 1 : 0) : tril(a, unit ? -1 : 0);
        if (unit) triangle = add(triangle, identity);
        const Tensor b = left ? b_left : b_right;
        const Tensor x = linalg::solve_triangular(a, b, upper, left, unit);
        CHECK(max_difference(left ? matmul(triangle, x) : matmul(x, triangle), b) < 1e-12);
      }
  // Broadcast batch: one triangle for a batch of right-hand sides.
  const Tensor x = linalg::solve_triangular(a.select(0, 0), small_tensor({5, 4, 2}, 13), true);
  CHECK(x.sizes() == Dims{5, 4, 2});
}

TEST_CASE("cholesky_solve and cholesky_inverse invert A from either factor") {
  const Tensor a = positive_definite({2, 4, 4}, 20);
  const Tensor b = small_tensor({2, 4, 3}, 21);
  const Tensor identity = expand(eye(4, {.dtype = kFloat64}), {2, 4, 4});
  for (const bool upper : {false, true}) {
    INFO("upper " << upper);
    const Tensor factor = linalg::cholesky(a, upper);
    CHECK(max_difference(matmul(a, cholesky_solve(b, factor, upper)), b) < 1e-12);
    CHECK(max_difference(matmul(cholesky_inverse(factor, upper), a), identity) < 1e-12);
  }
}

TEST_CASE("linalg errors: shapes, dtypes and devices are refused with torch's words") {
  const Tensor square = well_conditioned({3, 3}, 30);
  CHECK(error_of([&] {
          linalg::solve(small_tensor({2, 3}, 1), square);
        }).find("linalg.solve: A must be batches of square matrices, but they are 2 by 3 matrices") !=
        std::string::npos);
  CHECK(error_of([&] { linalg::inv(small_tensor({3}, 1)); }).find("at least 2 dimensions") != std::string::npos);
  const std::string wrong_dtype = error_of([&] { linalg::det(ones({2, 2}, {.dtype = kInt64})); });
  CHECK(wrong_dtype.find("linalg.det: Expected a float32 or float64 tensor as input. Got int64") != std::string::npos);
  CHECK(error_of([&] {
          linalg::solve(square, small_tensor({3, 2}, 2, kFloat32));
        }).find("Expected A and B to have the same dtype") != std::string::npos);
  const std::string mismatch = error_of([&] { linalg::solve(square, small_tensor({4, 2}, 3)); });
  CHECK(mismatch.find("Incompatible shapes of A and B for the equation AX = B (3x3 and [4, 2])") != std::string::npos);
  CHECK(error_of([&] { linalg::solve(square, small_tensor({3, 2}, 3), false); }).find("XA = B") != std::string::npos);
  CHECK(error_of([&] {
          linalg::solve_triangular(square, small_tensor({3}, 4), true);
        }).find("linalg.solve_triangular: Incompatible shapes") != std::string::npos);
  CHECK(error_of([&] {
          linalg::solve(well_conditioned({2, 3, 3}, 5), small_tensor({3, 3, 1}, 6));
        }).find("linalg.solve") != std::string::npos);  // batch dims 2 and 3 do not broadcast
  const auto [lu, pivots] = linalg::lu_factor(square);
  CHECK(error_of([&] {
          linalg::lu_solve(lu, pivots.to(kInt64), small_tensor({3, 1}, 7));
        }).find("linalg.lu_solve: Expected pivots to be int32") != std::string::npos);
  CHECK(error_of([&] {
          linalg::lu_solve(lu, zeros_like(pivots), small_tensor({3, 1}, 7));
        }).find("linalg.lu_solve: pivots[0] is 0, expected a 1-based row in [1, 3]") != std::string::npos);
  const int line = __LINE__ + 1;
  const std::string sited = error_of([&] { linalg::cholesky(small_tensor({2, 3}, 8)); });
  CHECK(ember::testing::names_line(sited, line));
}

TEST_CASE("linalg errors: singular and indefinite matrices name the batch element and the diagonal or minor") {
  const Tensor singular = testing::doubles({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3});
  const std::string solve_message = error_of([&] { linalg::solve(singular, small_tensor({3, 1}, 1)); });
  CHECK(solve_message.find("linalg.solve: The diagonal element 3 is zero, the solve could not be completed because "
                           "the input matrix is singular") != std::string::npos);
  // Batch element 1 of 3 is singular: torch names it.
  const Tensor batch = cat(
      {unsqueeze(well_conditioned({3, 3}, 2), 0), unsqueeze(singular, 0), unsqueeze(well_conditioned({3, 3}, 3), 0)});
  const std::string inv_message = error_of([&] { linalg::inv(batch); });
  CHECK(inv_message.find("linalg.inv: (Batch element 1): The diagonal element 3 is zero, the inversion could not be "
                         "completed") != std::string::npos);
  CHECK(error_of([&] { matrix_power(singular, -2); }).find("linalg.inv") != std::string::npos);
  // [[1, 2], [2, 1]] is indefinite: its leading minor of order 2 is -3.
  const Tensor indefinite = testing::doubles({1, 2, 2, 1}, {2, 2});
  CHECK(error_of([&] { linalg::cholesky(indefinite); })
            .find("linalg.cholesky: The factorization could not be completed because the input is not "
                  "positive-definite (the leading minor of order 2 is not positive-definite).") != std::string::npos);
  const Tensor batched = stack({positive_definite({2, 2}, 4), indefinite});
  CHECK(error_of([&] { linalg::cholesky(batched); }).find("linalg.cholesky: (Batch element 1): ") != std::string::npos);
}

TEST_CASE("linalg registry ops: a direct call with unbroadcast batches or 16-bit matrices is refused") {
  const OpDef& solve = lookup_op("linalg_solve");
  const Tensor a = well_conditioned({2, 3, 3}, 40);
  CHECK(error_of([&] {
          dispatch_one(solve, {a, small_tensor({1, 3, 2}, 41)}, {{"inverse", false}});
        }).find("linalg_solve: expected B of shape [*, 3, k] with A's batch dims") != std::string::npos);
  CHECK(error_of([&] {
          dispatch_one(lookup_op("linalg_cholesky"), {a.to(kBFloat16)});
        }).find("linalg_cholesky: expected a float32 or float64 matrix, got bfloat16") != std::string::npos);
}

}  // namespace test_linalg_cholesky
