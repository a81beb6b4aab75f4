// linalg::qr, eigh, svd and their composites against float64 host references: the factorizations
// reproduce A with orthonormal factors (sign-free checks: the signs of vectors are not fixed),
// values come in order, batches and strided inputs work, and bad input gets a clear error.
#include <doctest/doctest.h>

#include "error_of.h"
#include "linalg_spectral_reference.h"
#include "runtime/ember.h"
#include "runtime/linalg_spectral.h"

namespace test_linalg_spectral {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kTight = 1e-12;

void check_qr(const Tensor& a, std::string_view mode) {
  const auto [q, r] = linalg::qr(a, mode);
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1];
  const int64_t k = std::min(m, n), count = a.numel() / (m * n);
  CHECK(q.sizes()[q.dim() - 1] == (mode == "complete" ? m : k));
  CHECK(r.sizes()[r.dim() - 2] == (mode == "complete" ? m : k));
  for (int64_t b = 0; b < count; ++b) {
    const HostMatrix qm = host_matrix(q, b), rm = host_matrix(r, b);
    CHECK(max_difference(product(qm, rm), host_matrix(a.contiguous(), b)) < kTight);
    CHECK(orthonormality_error(qm) < kTight);
    for (int64_t i = 0; i < rm.rows; ++i)
      for (int64_t j = 0; j < std::min(i, rm.cols); ++j) CHECK(rm(i, j) == 0.0);
  }
}

}  // namespace

TEST_CASE("linalg::qr: Q R = A, Q^T Q = I and R upper triangular for tall, wide, square and batched A") {
  for (const Dims& sizes : {Dims{5, 3}, Dims{3, 5}, Dims{4, 4}, Dims{2, 3, 6, 4}})
    for (std::string_view mode : {"reduced", "complete"}) {
      INFO("shape ", sizes, " mode ", mode);
      check_qr(small_tensor(sizes, 3), mode);
    }
  // A transposed (strided) input reads through its strides.
  check_qr(small_tensor({4, 6}, 5).transpose(0, 1), "reduced");
  const auto [q, r] = linalg::qr(small_tensor({5, 3}, 3), "r");
  CHECK(q.numel() == 0);
  CHECK(max_difference(host_matrix(r), host_matrix(std::get<1>(linalg::qr(small_tensor({5, 3}, 3))))) == 0.0);
}

TEST_CASE("linalg::eigh: V diag(w) V^T = A with ascending w, from either triangle, batched") {
  const Tensor a = symmetric_input(3, 5, 11);
  for (std::string_view uplo : {"L", "U"}) {
    // Garbage in the triangle not read: the result must not change.
    const Tensor ignored = uplo == "L" ? triu(full_like(a, 100.0), 1) : tril(full_like(a, 100.0), -1);
    const auto [w, v] = linalg::eigh(a + ignored, uplo);
    for (int64_t b = 0; b < 3; ++b) {
      const std::vector<double> values = host_vector(w, b);
      CHECK(std::is_sorted(values.begin(), values.end()));
      const HostMatrix vm = host_matrix(v, b);
      CHECK(max_difference(product(scale_columns(vm, values), transpose(vm)), host_matrix(a, b)) < 1e-11);
      CHECK(orthonormality_error(vm) < kTight);
      const std::vector<double> only = host_vector(linalg::eigvalsh(a + ignored, uplo), b);
      for (size_t i = 0; i < values.size(); ++i) CHECK(only[i] == doctest::Approx(values[i]).epsilon(1e-13));
    }
  }
}

TEST_CASE("linalg::svd: U diag(S) Vh = A with descending S, full and reduced, batched, and svdvals agrees") {
  for (const Dims& sizes : {Dims{6, 4}, Dims{4, 6}, Dims{5, 5}, Dims{2, 2, 7, 3}})
    for (bool full : {true, false}) {
      INFO("shape ", sizes, " full_matrices ", full);
      const Tensor a = small_tensor(sizes, 17);
      const auto [u, s, vh] = linalg::svd(a, full);
      const int64_t m = sizes[sizes.size() - 2], n = sizes[sizes.size() - 1], k = std::min(m, n);
      CHECK(u.sizes()[u.dim() - 1] == (full ? m : k));
      CHECK(vh.sizes()[vh.dim() - 2] == (full ? n : k));
      for (int64_t b = 0; b < a.numel() / (m * n); ++b) {
        const std::vector<double> values = host_vector(s, b);
        CHECK(std::is_sorted(values.rbegin(), values.rend()));
        const HostMatrix um = host_matrix(u, b), vm = host_matrix(vh, b);
        CHECK(orthonormality_error(um) < kTight);
        CHECK(orthonormality_error(transpose(vm)) < kTight);
        // Only the first k columns of U and rows of Vh meet S.
        HostMatrix uk{m, k, {}}, vk{k, n, {}};
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < k; ++j) uk.values.push_back(um(i, j));
        vk.values.assign(vm.values.begin(), vm.values.begin() + k * n);
        CHECK(max_difference(product(scale_columns(uk, values), vk), host_matrix(a, b)) < kTight);
        const std::vector<double> only = host_vector(linalg::svdvals(a), b);
        for (size_t i = 0; i < values.size(); ++i) CHECK(only[i] == doctest::Approx(values[i]).epsilon(1e-13));
      }
    }
}

TEST_CASE("linalg::pinv meets the four Moore-Penrose conditions, for full-rank, rank-deficient and symmetric A") {
  // Rank 2 of 4 columns: the second pair of columns repeats the first.
  Tensor deficient = small_tensor({5, 2}, 23);
  deficient = cat({deficient, deficient * 2.0}, 1);
  const Tensor symmetric = symmetric_input(1, 4, 29).squeeze(0);
  for (const auto& [a, hermitian] :
       {std::pair{small_tensor({5, 3}, 19), false}, std::pair{deficient, false}, std::pair{symmetric, true}}) {
    const HostMatrix am = host_matrix(a), xm = host_matrix(linalg::pinv(a, std::nullopt, std::nullopt, hermitian));
    CHECK(max_difference(product(product(am, xm), am), am) < 1e-11);
    CHECK(max_difference(product(product(xm, am), xm), xm) < 1e-11);
    const HostMatrix ax = product(am, xm), xa = product(xm, am);
    CHECK(max_difference(ax, transpose(ax)) < 1e-11);
    CHECK(max_difference(xa, transpose(xa)) < 1e-11);
  }
  CHECK(linalg::matrix_rank(deficient).item<int64_t>() == 2);
  CHECK(linalg::matrix_rank(small_tensor({3, 5, 4}, 31)).to_vector<int64_t>() == std::vector<int64_t>{4, 4, 4});
  // A tolerance above every singular value leaves rank 0 and a zero pseudo-inverse.
  CHECK(linalg::matrix_rank(deficient, 1e6).item<int64_t>() == 0);
  CHECK(values_of(abs(linalg::pinv(deficient, 1.0 + 1e-12)).sum()) == std::vector<double>{0.0});
}

TEST_CASE("linalg::matrix_norm against explicit float64 formulas for every order, with dims and keepdim") {
  const Tensor a = small_tensor({2, 4, 3}, 37);
  for (int64_t b = 0; b < 2; ++b) {
    const HostMatrix am = host_matrix(a, b);
    double fro = 0.0, col_max = 0.0, col_min = 1e300, row_max = 0.0, row_min = 1e300;
    for (double v : am.values) fro += v * v;
    for (int64_t j = 0; j < am.cols; ++j) {
      double total = 0.0;
      for (int64_t i = 0; i < am.rows; ++i) total += std::abs(am(i, j));
      col_max = std::max(col_max, total), col_min = std::min(col_min, total);
    }
    for (int64_t i = 0; i < am.rows; ++i) {
      double total = 0.0;
      for (int64_t j = 0; j < am.cols; ++j) total += std::abs(am(i, j));
      row_max = std::max(row_max, total), row_min = std::min(row_min, total);
    }
    // The singular values from the eigenvalues of A^T A (a different route than the SVD).
    const Tensor gram = doubles(product(transpose(am), am).values, {am.cols, am.cols});
    std::vector<double> s = values_of(sqrt(linalg::eigvalsh(gram)));
    const double nuc = s[0] + s[1] + s[2];
    const auto at = [&](const Tensor& norms) { return values_of(norms)[static_cast<size_t>(b)]; };
    CHECK(at(linalg::matrix_norm(a)) == doctest::Approx(std::sqrt(fro)).epsilon(1e-13));
    CHECK(at(linalg::matrix_norm(a, "nuc")) == doctest::Approx(nuc).epsilon(1e-12));
    CHECK(at(linalg::matrix_norm(a, 2)) == doctest::Approx(s[2]).epsilon(1e-12));
    CHECK(at(linalg::matrix_norm(a, -2)) == doctest::Approx(s[0]).epsilon(1e-12));
    CHECK(at(linalg::matrix_norm(a, 1)) == doctest::Approx(col_max).epsilon(1e-14));
    CHECK(at(linalg::matrix_norm(a, -1)) == doctest::Approx(col_min).epsilon(1e-14));
    CHECK(at(linalg::matrix_norm(a, INFINITY)) == doctest::Approx(row_max).epsilon(1e-14));
    CHECK(at(linalg::matrix_norm(a, -INFINITY)) == doctest::Approx(row_min).epsilon(1e-14));
    CHECK(at(linalg::cond(a)) == doctest::Approx(s[2] / s[0]).epsilon(1e-12));
  }
  // Other dims: the norm of A^T over (2, 1) equals A's over (1, 2) for 1 <-> inf.
  CHECK(values_of(linalg::matrix_norm(a, 1, {2, 1})) == values_of(linalg::matrix_norm(a, INFINITY, {1, 2})));
  CHECK(linalg::matrix_norm(a, "nuc", {-2, -1}, true).sizes() == Dims{2, 1, 1});
  CHECK(linalg::matrix_norm(a, 1, {0, 2}).sizes() == Dims{4});
  // cond with the 1-norm: ||A||_1 ||A^-1||_1 on a matrix with a known inverse.
  const Tensor diagonal = doubles({2, 0, 0, 0.5}, {2, 2});
  CHECK(linalg::cond(diagonal, 1.0).item<double>() == doctest::Approx(4.0).epsilon(1e-14));
  CHECK(std::isinf(linalg::cond(doubles({1, 2, 2, 4}, {2, 2}), "fro").item<double>()));
}

TEST_CASE("linalg::lstsq: the residual is orthogonal to A's columns, with PyTorch's gelsd fields") {
  const Tensor a = small_tensor({2, 6, 3}, 41), b = small_tensor({2, 6, 2}, 43);
  const auto [x, residuals, rank, singular_values] = linalg::lstsq(a, b);
  CHECK(x.sizes() == Dims{2, 3, 2});
  CHECK(rank.to_vector<int64_t>() == std::vector<int64_t>{3, 3});
  CHECK(singular_values.sizes() == Dims{2, 3});
  for (int64_t batch = 0; batch < 2; ++batch) {
    const HostMatrix am = host_matrix(a, batch), bm = host_matrix(b, batch);
    HostMatrix r = product(am, host_matrix(x, batch));
    for (size_t i = 0; i < r.values.size(); ++i) r.values[i] -= bm.values[i];
    const HostMatrix normal = product(transpose(am), r);  // A^T (A x - b) = 0
    for (double v : normal.values) CHECK(std::abs(v) < 1e-12);
    for (int64_t j = 0; j < 2; ++j) {
      double squared = 0.0;
      for (int64_t i = 0; i < r.rows; ++i) squared += r(i, j) * r(i, j);
      CHECK(host_vector(residuals, batch)[static_cast<size_t>(j)] == doctest::Approx(squared).epsilon(1e-12));
    }
  }
  // A vector right-hand side, and a wide system (minimum-norm solution, no residuals).
  CHECK(std::get<0>(linalg::lstsq(small_tensor({6, 3}, 47), small_tensor({6}, 53))).sizes() == Dims{3});
  const auto wide = linalg::lstsq(small_tensor({2, 4}, 59), small_tensor({2, 1}, 61));
  CHECK(std::get<1>(wide).numel() == 0);
}

TEST_CASE("linalg spectral functions in float32 agree with float64 within float32 tolerance") {
  const Tensor a64 = small_tensor({3, 5, 4}, 67), a32 = a64.to(kFloat32);
  const auto [q, r] = linalg::qr(a32);
  CHECK(q.dtype() == kFloat32);
  CHECK(max_difference(host_matrix(matmul(q, r), 1), host_matrix(a64, 1)) < 1e-5);
  const std::vector<double> s64 = values_of(linalg::svdvals(a64)), s32 = values_of(linalg::svdvals(a32));
  for (size_t i = 0; i < s64.size(); ++i) CHECK(std::abs(s64[i] - s32[i]) < 1e-5 * (1 + s64[i]));
  const Tensor sym = symmetric_input(2, 4, 71);
  const std::vector<double> w64 = values_of(linalg::eigvalsh(sym)), w32 = values_of(linalg::eigvalsh(sym.to(kFloat32)));
  for (size_t i = 0; i < w64.size(); ++i) CHECK(std::abs(w64[i] - w32[i]) < 1e-5 * (1 + std::abs(w64[i])));
  CHECK(std::abs(linalg::matrix_norm(a32, "nuc").sum().item<double>() -
                 linalg::matrix_norm(a64, "nuc").sum().item<double>()) < 1e-4);
}

TEST_CASE("linalg spectral errors name the function, the values and the call site") {
  const Tensor square = small_tensor({3, 3}, 1);
  CHECK(error_of([&] {
          linalg::eigh(small_tensor({3, 4}, 1));
        }).find("linalg.eigh: A must be batches of square matrices, but they are 3 by 4 matrices") !=
        std::string::npos);
  CHECK(error_of([&] { linalg::qr(square, "full"); }).find("unrecognized mode 'full'") != std::string::npos);
  CHECK(error_of([&] { linalg::eigh(square, "X"); }).find("UPLO must be 'L' or 'U', got 'X'") != std::string::npos);
  CHECK(error_of([&] { linalg::svd(small_tensor({3}, 1)); }).find("at least 2 dimensions, got shape [3]") !=
        std::string::npos);
  CHECK(error_of([&] {
          linalg::qr(ones({2, 2}, {.dtype = kInt64}));
        }).find("Expected a floating point tensor as input. Got int64") != std::string::npos);
  CHECK(error_of([&] { linalg::svd(square.to(kFloat16)); }).find("float16 is not supported") != std::string::npos);
  CHECK(error_of([&] { linalg::matrix_norm(square, 3); }).find("Order 3 not supported") != std::string::npos);
  CHECK(error_of([&] { linalg::matrix_norm(square, "abc"); }).find("Order abc not supported") != std::string::npos);
  CHECK(error_of([&] {
          linalg::matrix_norm(square, "fro", {1, 1});
        }).find("dims must be different") != std::string::npos);
  CHECK(error_of([&] {
          linalg::cond(small_tensor({3, 4}, 1), 1.0);
        }).find("square matrices, but they are 3 by 4") != std::string::npos);
  CHECK(error_of([&] {
          linalg::lstsq(square, small_tensor({4, 1}, 1));
        }).find("input.size(-2) should match other.size(-2)") != std::string::npos);
  CHECK(error_of([&] { linalg::qr(square, "full"); }).find("test_linalg_spectral.cpp") != std::string::npos);
}

TEST_CASE("linalg::svd and eigh refuse inf / NaN input, naming the matrix, instead of returning garbage") {
  // 3 columns take Eigen's Jacobi path, 17 its divide and conquer; the second matrix is bad.
  for (int64_t n : {3, 17}) {
    INFO("n ", n);
    const Tensor a = small_tensor({2, n, n}, 7);
    a.data_ptr<double>()[n * n + 1] = std::nan("");
    const std::string expected = "non-finite values (matrix 1 of the batch";
    CHECK(error_of([&] { linalg::svd(a); }).find(expected) != std::string::npos);
    CHECK(error_of([&] { linalg::svdvals(a); }).find(expected) != std::string::npos);
    a.data_ptr<double>()[n * n + 1] = INFINITY;
    CHECK(error_of([&] { linalg::svd(a, false); }).find(expected) != std::string::npos);
    CHECK(error_of([&] { linalg::eigh(a, "U"); }).find("linalg.eigh: the algorithm failed to converge for matrix 1") !=
          std::string::npos);
  }
}

}  // namespace test_linalg_spectral
