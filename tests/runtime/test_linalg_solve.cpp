// linalg.solve, inv, det, slogdet, logdet, lu_factor and lu_solve on the CPU against float64
// references: residuals A X - B, inv(A) A = I, cofactor determinants and a plain-loop getf2.
#include <doctest/doctest.h>

#include <limits>

#include "linalg_solve_test_util.h"

namespace test_linalg_solve {

using namespace ember;
using namespace ember::linalg_test;

TEST_CASE("linalg.solve: batched, broadcast, vector and left=false systems leave no residual") {
  const Tensor a = well_conditioned({3, 4, 4}, 1);
  const Tensor b = small_tensor({3, 4, 2}, 2);
  CHECK(max_difference(matmul(a, linalg::solve(a, b)), b) < 1e-12);
  // Batch dims broadcast: A [2,1,3,3] with B [4,3,2] -> X [2,4,3,2].
  const Tensor a_broadcast = well_conditioned({2, 1, 3, 3}, 3);
  const Tensor b_broadcast = small_tensor({4, 3, 2}, 4);
  const Tensor x_broadcast = linalg::solve(a_broadcast, b_broadcast);
  CHECK(x_broadcast.sizes() == Dims{2, 4, 3, 2});
  CHECK(max_difference(matmul(a_broadcast, x_broadcast), expand(b_broadcast, {2, 4, 3, 2})) < 1e-12);
  // B of shape A.shape[:-1] and a 1-D B are vectors.
  const Tensor a_batch = well_conditioned({2, 3, 3}, 5);
  const Tensor vectors = small_tensor({2, 3}, 6);
  const Tensor x_vectors = linalg::solve(a_batch, vectors);
  CHECK(x_vectors.sizes() == Dims{2, 3});
  CHECK(max_difference(squeeze(matmul(a_batch, unsqueeze(x_vectors, -1)), -1), vectors) < 1e-12);
  const Tensor one_vector = small_tensor({3}, 7);
  CHECK(max_difference(linalg::solve(a_batch, one_vector), linalg::solve(a_batch, expand(one_vector, {2, 3}))) < 1e-14);
  // X A = B.
  const Tensor rows = small_tensor({2, 5, 3}, 8);
  const Tensor x_right = linalg::solve(a_batch, rows, /*left=*/false);
  CHECK(x_right.sizes() == Dims{2, 5, 3});
  CHECK(max_difference(matmul(x_right, a_batch), rows) < 1e-12);
  // Transposed (strided) inputs are read through their strides.
  CHECK(max_difference(matmul(transpose(a, 1, 2), linalg::solve(transpose(a, 1, 2), b)), b) < 1e-12);
}

TEST_CASE("linalg.inv and inverse: inv(A) A = I, a matrix that needs row swaps included") {
  const Tensor a = well_conditioned({2, 4, 4}, 11);
  const Tensor identity = expand(eye(4, {.dtype = kFloat64}), {2, 4, 4});
  CHECK(max_difference(matmul(linalg::inv(a), a), identity) < 1e-12);
  CHECK(max_difference(inverse(a), linalg::inv(a)) == 0.0);
  const Tensor swapped = testing::doubles({0, 2, 1, 1}, {2, 2});  // zero first pivot: needs a swap
  CHECK(max_difference(linalg::inv(swapped), testing::doubles({-0.5, 1, 0.5, 0}, {2, 2})) < 1e-15);
}

TEST_CASE("linalg.det, slogdet and logdet match cofactor expansion, signs and singular matrices included") {
  for (int64_t n = 1; n <= 4; ++n) {
    INFO("n = " << n);
    const Tensor a = small_tensor({3, n, n}, 20 + static_cast<uint32_t>(n));  // no diagonal shift: any sign
    const std::vector<double> values = values_of(a), dets = values_of(linalg::det(a));
    const auto [sign, logabsdet] = linalg::slogdet(a);
    const std::vector<double> signs = values_of(sign), logs = values_of(logabsdet);
    for (int64_t m = 0; m < 3; ++m) {
      const double expected = cofactor_det({values.begin() + m * n * n, values.begin() + (m + 1) * n * n}, n);
      CHECK(std::abs(dets[m] - expected) < 1e-12 * (1.0 + std::abs(expected)));
      CHECK(signs[m] == (expected > 0 ? 1.0 : -1.0));
      CHECK(std::abs(logs[m] - std::log(std::abs(expected))) < 1e-12);
    }
    CHECK(max_difference(det(a), linalg::det(a)) == 0.0);
  }
  const Tensor singular = testing::doubles({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3});  // row 2 = 2 row 1
  CHECK(values_of(linalg::det(singular))[0] == 0.0);
  const auto [sign, logabsdet] = linalg::slogdet(singular);
  CHECK(values_of(sign)[0] == 0.0);
  CHECK(values_of(logabsdet)[0] == -std::numeric_limits<double>::infinity());
  CHECK(values_of(logdet(singular))[0] == -std::numeric_limits<double>::infinity());
  const Tensor negative = testing::doubles({0, 1, 1, 0}, {2, 2});
  CHECK(std::isnan(values_of(logdet(negative))[0]));
  const Tensor positive = well_conditioned({2, 3, 3}, 30);
  CHECK(max_difference(logdet(positive), log(linalg::det(positive))) < 1e-12);
  CHECK(values_of(linalg::det(zeros({0, 0}, {.dtype = kFloat64})))[0] == 1.0);  // empty product
}

TEST_CASE("linalg.lu_factor: P L U = A with LAPACK's pivots, and lu_solve in every form") {
  const Tensor a = small_tensor({2, 4, 4}, 40);
  const auto [lu, pivots] = linalg::lu_factor(a);
  CHECK(pivots.dtype() == kInt32);
  CHECK(pivots.sizes() == Dims{2, 4});
  const std::vector<double> values = values_of(a), packed = values_of(lu);
  const std::vector<int32_t> pivot_values = pivots.contiguous().to_vector<int32_t>();
  for (int64_t m = 0; m < 2; ++m) {
    const auto [expected_lu, expected_pivots] =
        reference_lu({values.begin() + m * 16, values.begin() + (m + 1) * 16}, 4);
    for (int64_t k = 0; k < 4; ++k) CHECK(pivot_values[m * 4 + k] == expected_pivots[k]);
    for (int64_t e = 0; e < 16; ++e) CHECK(std::abs(packed[m * 16 + e] - expected_lu[e]) < 1e-12);
  }
  const Tensor b = small_tensor({2, 4, 3}, 41);
  CHECK(max_difference(matmul(a, linalg::lu_solve(lu, pivots, b)), b) < 1e-11);
  CHECK(max_difference(matmul(transpose(a, 1, 2), linalg::lu_solve(lu, pivots, b, true, true)), b) < 1e-11);
  const Tensor rows = small_tensor({2, 3, 4}, 42);
  CHECK(max_difference(matmul(linalg::lu_solve(lu, pivots, rows, false), a), rows) < 1e-11);
  CHECK(max_difference(matmul(linalg::lu_solve(lu, pivots, rows, false, true), transpose(a, 1, 2)), rows) < 1e-11);
  // B's batch broadcasts against the factors'.
  const Tensor shared = small_tensor({3, 1, 4, 2}, 43);
  const Tensor x = linalg::lu_solve(lu, pivots, shared);
  CHECK(x.sizes() == Dims{3, 2, 4, 2});
  CHECK(max_difference(matmul(a, x), expand(shared, {3, 2, 4, 2})) < 1e-11);
}

TEST_CASE("linalg.solve and det in float32 stay within float32 rounding of float64") {
  const Tensor a = well_conditioned({3, 5, 5}, 50);
  const Tensor b = small_tensor({3, 5, 2}, 51);
  const Tensor x32 = linalg::solve(a.to(kFloat32), b.to(kFloat32));
  CHECK(x32.dtype() == kFloat32);
  CHECK(max_difference(x32, linalg::solve(a, b)) < 1e-5);
  const Tensor det32 = linalg::det(a.to(kFloat32));
  CHECK(det32.dtype() == kFloat32);
  const std::vector<double> d32 = values_of(det32), d64 = values_of(linalg::det(a));
  for (size_t i = 0; i < d64.size(); ++i) CHECK(std::abs(d32[i] - d64[i]) < 1e-5 * std::abs(d64[i]));
  const auto [lu, pivots] = linalg::lu_factor(a.to(kFloat32));
  CHECK(lu.dtype() == kFloat32);
  CHECK(max_difference(linalg::lu_solve(lu, pivots, b.to(kFloat32)), linalg::solve(a, b)) < 1e-5);
}

TEST_CASE("matrix_power: a negative power is the power of the inverse") {
  const Tensor a = well_conditioned({2, 3, 3}, 60);
  CHECK(max_difference(matrix_power(a, -1), linalg::inv(a)) < 1e-15);
  const Tensor identity = expand(eye(3, {.dtype = kFloat64}), {2, 3, 3});
  CHECK(max_difference(matmul(matrix_power(a, -3), matmul(a, matmul(a, a))), identity) < 1e-12);
}

TEST_CASE("linalg under autocast: 16-bit matrices are factored in float32, as PyTorch's autocast does") {
  const Tensor a = well_conditioned({2, 4, 4}, 70);
  const Tensor b = small_tensor({2, 4, 3}, 71);
  const Tensor a16 = a.to(kBFloat16), b16 = b.to(kBFloat16);
  AutocastGuard autocast(kBFloat16);
  const Tensor x = linalg::solve(a16, b16);
  CHECK(x.dtype() == kFloat32);
  // The system solved is the bf16-rounded one, exactly as an explicit float32 solve of it.
  const Tensor expected = linalg::solve(a16.to(kFloat32), b16.to(kFloat32));
  CHECK(max_difference(x, expected) == 0.0);
  CHECK(linalg::cholesky(matmul(a16, transpose(a16, -2, -1))).dtype() == kFloat32);
  CHECK(std::get<1>(linalg::slogdet(a16)).dtype() == kFloat32);
  CHECK(linalg::solve_triangular(a16, b16, /*upper=*/true).dtype() == kFloat32);
  const auto [lu, pivots] = linalg::lu_factor(a16);
  CHECK(lu.dtype() == kFloat32);
  CHECK(linalg::lu_solve(lu, pivots, b16).dtype() == kFloat32);
}

}  // namespace test_linalg_solve
