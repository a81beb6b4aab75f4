// Conformance cases for the solve family's registry ops (runtime/ops/linalg_solve_ops.cpp,
// linalg_cholesky_ops.cpp): linalg_solve, linalg_lu_factor, linalg_lu_solve, linalg_slogdet,
// linalg_cholesky and linalg_solve_triangular, against float64 references written with plain
// loops (getf2 elimination, Cholesky-Crout, substitution). Matrices that must be invertible or
// positive-definite are derived inputs: random values with a dominant diagonal.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_linalg_solve {

namespace {

using Matrix = std::vector<double>;  // row-major n x n, or n x k

int64_t batch_count(const Dims& sizes) {
  int64_t count = 1;
  for (int d = 0; d + 2 < sizes.size(); ++d) count *= sizes[d];
  return count;
}

// Random values in [-1, 1] with `shift` added to the diagonal (|shift| > n: diagonally dominant).
InputSpec dominant(Dims sizes, double shift, uint64_t seed, Layout layout = Layout::Contiguous) {
  InputSpec spec{sizes, real(), layout};
  spec.derive = [sizes, shift, seed](const std::vector<RefTensor>&) {
    const int64_t n = sizes[sizes.size() - 1];
    std::vector<double> values(static_cast<size_t>(sizes.product()));
    uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < values.size(); ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      values[i] = static_cast<double>(state >> 11) / 4503599627370496.0 - 1.0;
      if (static_cast<int64_t>(i) % (n * n) / n == static_cast<int64_t>(i) % n) values[i] += shift;
    }
    return values;
  };
  return spec;
}

// Symmetric positive-definite: (M + M^T) / 2 + (n + 1) I with M in [-1, 1].
InputSpec positive_definite(Dims sizes, uint64_t seed, Layout layout = Layout::Contiguous) {
  InputSpec spec = dominant(sizes, 0.0, seed, layout);
  auto random = spec.derive;
  spec.derive = [sizes, random](const std::vector<RefTensor>& earlier) {
    std::vector<double> values = random(earlier);
    const int64_t n = sizes[sizes.size() - 1];
    for (int64_t m = 0; m < batch_count(sizes); ++m)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j) {
          double& lower = values[(m * n + i) * n + j];
          double& upper = values[(m * n + j) * n + i];
          lower = upper = 0.5 * (lower + upper) + (i == j ? static_cast<double>(n + 1) : 0.0);
        }
    return values;
  };
  return spec;
}

// Valid 1-based int32 pivots [*, n]: pivots[k] in [k + 1, n].
InputSpec pivots_for(Dims sizes) {
  InputSpec spec{sizes, real(), Layout::Contiguous, true, ember::kInt32};
  spec.derive = [sizes](const std::vector<RefTensor>&) {
    const int64_t n = sizes[sizes.size() - 1];
    std::vector<double> values(static_cast<size_t>(sizes.product()));
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t k = static_cast<int64_t>(i) % n;
      values[i] = static_cast<double>(k + 1 + (3 * i + 1) % (n - k));
    }
    return values;
  };
  return spec;
}

Matrix matrix_at(const RefTensor& t, int64_t m) {
  const int64_t elements = t.sizes[t.sizes.size() - 2] * t.sizes[t.sizes.size() - 1];
  return Matrix(t.values.begin() + m * elements, t.values.begin() + (m + 1) * elements);
}

// getf2: packed LU and 1-based pivots.
std::pair<Matrix, std::vector<int64_t>> lu_of(Matrix a, int64_t n) {
  std::vector<int64_t> pivots(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::abs(a[i * n + k]) > std::abs(a[p * n + k])) p = i;
    pivots[k] = p + 1;
    for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[p * n + j]);
    if (a[k * n + k] == 0.0) continue;
    for (int64_t i = k + 1; i < n; ++i) {
      a[i * n + k] /= a[k * n + k];
      for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= a[i * n + k] * a[k * n + j];
    }
  }
  return {a, pivots};
}

// X with T X = B for the triangle of t (lower or upper, unit diagonal or not); b is n x k.
Matrix triangular_solve(const Matrix& t, Matrix b, int64_t n, int64_t k, bool upper, bool unit) {
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = upper ? n - 1 - step : step;
    for (int64_t c = 0; c < k; ++c) {
      double value = b[i * k + c];
      for (int64_t j = 0; j < n; ++j)
        if (upper ? j > i : j < i) value -= t[i * n + j] * b[j * k + c];
      b[i * k + c] = unit ? value : value / t[i * n + i];
    }
  }
  return b;
}

Matrix transposed(const Matrix& a, int64_t n) {
  Matrix t(a.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) t[j * n + i] = a[i * n + j];
  return t;
}

void swap_rows(Matrix& b, int64_t k, int64_t r, int64_t columns) {
  for (int64_t c = 0; c < columns; ++c) std::swap(b[k * columns + c], b[r * columns + c]);
}
// X with A X = B (or A^T X = B) from A's packed factors.
Matrix lu_solve_of(const Matrix& lu, const std::vector<int64_t>& pivots, Matrix b, int64_t n, int64_t k, bool adjoint) {
  if (!adjoint) {
    for (int64_t s = 0; s < n; ++s) swap_rows(b, s, pivots[s] - 1, k);
    return triangular_solve(lu, triangular_solve(lu, b, n, k, false, true), n, k, true, false);
  }
  const Matrix t = transposed(lu, n);
  b = triangular_solve(t, triangular_solve(t, b, n, k, false, false), n, k, true, true);
  for (int64_t s = n - 1; s >= 0; --s) swap_rows(b, s, pivots[s] - 1, k);
  return b;
}

// Applies `per_matrix(m, output)` for every matrix of the batch of `sizes`, filling `out`.
template <typename PerMatrix>
RefTensor over_batch(const Dims& sizes, const Dims& out_sizes, PerMatrix per_matrix) {
  RefTensor out = filled(out_sizes, 0.0);
  const int64_t count = batch_count(sizes);
  const int64_t per = count == 0 ? 0 : out.numel() / count;
  for (int64_t m = 0; m < count; ++m) {
    const Matrix values = per_matrix(m);
    std::copy(values.begin(), values.end(), out.values.begin() + m * per);
  }
  return out;
}

Case solve_case(const char* op, const char* label, std::vector<InputSpec> inputs, Attrs attrs, Reference reference) {
  // Elimination's float32 rounding grows with n and the condition number (small here).
  return Case{.op = op,
              .label = label,
              .inputs = std::move(inputs),
              .attrs = std::move(attrs),
              .reference = std::move(reference),
              .float32 = {1e-4, 1e-5},
              .float64 = {1e-9, 1e-11},
              .gradient = {1e-5, 1e-6}};
}

std::vector<Case> linalg_solve_cases() {
  using enum Layout;
  std::vector<Case> cases;
  const Reference solve_reference = [](const std::vector<RefTensor>& in, const Attrs&) {
    const int64_t n = in[0].sizes[in[0].sizes.size() - 1], k = in[1].sizes[in[1].sizes.size() - 1];
    return std::vector<RefTensor>{over_batch(in[0].sizes, in[1].sizes, [&](int64_t m) {
      const auto [lu, pivots] = lu_of(matrix_at(in[0], m), n);
      return lu_solve_of(lu, pivots, matrix_at(in[1], m), n, k, false);
    })};
  };
  const std::vector<std::pair<const char*, std::vector<InputSpec>>> systems = {
      {"[3,3] with [3,2]", {dominant({3, 3}, 4.0, 1), {{3, 2}}}},
      {"batched transposed A [2,4,4] with strided B [2,4,1]",
       {dominant({2, 4, 4}, -5.0, 2, Transposed), {{2, 4, 1}, real(), Strided}}},
      {"expanded B [2,3,2]", {dominant({2, 3, 3}, 4.0, 3), {{2, 3, 2}, real(), Expanded}}},
      {"pivoting [4,4] (no diagonal shift)", {dominant({4, 4}, 0.0, 4), {{4, 3}}}},
      {"size-1 [1,1] with [1,3]", {dominant({1, 1}, 2.0, 5), {{1, 3}}}},
      {"size-0 batch [0,3,3]", {dominant({0, 3, 3}, 4.0, 6), {{0, 3, 2}}}},
      {"size-0 n [0,0] with [0,2]", {dominant({0, 0}, 1.0, 7), {{0, 2}}}},
  };
  for (const auto& [label, inputs] : systems)
    cases.push_back(solve_case("linalg_solve", label, inputs, {{"inverse", false}}, solve_reference));

  const Reference lu_reference = [](const std::vector<RefTensor>& in, const Attrs&) {
    const int64_t n = in[0].sizes[in[0].sizes.size() - 1];
    Dims pivot_sizes;
    for (int d = 0; d + 1 < in[0].sizes.size(); ++d) pivot_sizes.push_back(in[0].sizes[d]);
    RefTensor pivots = filled(pivot_sizes, 0.0, ember::kInt32);
    RefTensor packed = over_batch(in[0].sizes, in[0].sizes, [&](int64_t m) {
      const auto [lu, row_swaps] = lu_of(matrix_at(in[0], m), n);
      for (int64_t k = 0; k < n; ++k) pivots.values[m * n + k] = static_cast<double>(row_swaps[k]);
      return lu;
    });
    return std::vector<RefTensor>{packed, pivots};
  };
  for (const auto& [label, input] : std::vector<std::pair<const char*, InputSpec>>{
           {"[4,4] with row swaps", dominant({4, 4}, 0.0, 10)},
           {"batched transposed [2,3,3]", dominant({2, 3, 3}, 0.5, 11, Transposed)},
           {"size-0 [0,0]", dominant({0, 0}, 0.0, 12)}})
    cases.push_back(solve_case("linalg_lu_factor", label, {input}, {}, lu_reference));

  for (const bool adjoint : {false, true}) {
    const Reference lu_solve_reference = [adjoint](const std::vector<RefTensor>& in, const Attrs&) {
      const int64_t n = in[0].sizes[in[0].sizes.size() - 1], k = in[2].sizes[in[2].sizes.size() - 1];
      return std::vector<RefTensor>{over_batch(in[2].sizes, in[2].sizes, [&](int64_t m) {
        std::vector<int64_t> pivots(static_cast<size_t>(n));
        for (int64_t s = 0; s < n; ++s) pivots[s] = static_cast<int64_t>(in[1].values[m * n + s]);
        return lu_solve_of(matrix_at(in[0], m), pivots, matrix_at(in[2], m), n, k, adjoint);
      })};
    };
    const std::string suffix = adjoint ? ", adjoint" : "";
    cases.push_back(solve_case("linalg_lu_solve", ("[4,4] with [4,2]" + suffix).c_str(),
                               {dominant({4, 4}, 4.0, 20), pivots_for({4}), {{4, 2}}}, {{"adjoint", adjoint}},
                               lu_solve_reference));
    cases.push_back(
        solve_case("linalg_lu_solve", ("batched transposed LU [2,3,3], strided B" + suffix).c_str(),
                   {dominant({2, 3, 3}, -3.0, 21, Transposed), pivots_for({2, 3}), {{2, 3, 2}, real(), Strided}},
                   {{"adjoint", adjoint}}, lu_solve_reference));
  }

  const Reference slogdet_reference = [](const std::vector<RefTensor>& in, const Attrs&) {
    const int64_t n = in[0].sizes[in[0].sizes.size() - 1];
    Dims batch;
    for (int d = 0; d + 2 < in[0].sizes.size(); ++d) batch.push_back(in[0].sizes[d]);
    RefTensor sign = filled(batch, 0.0), logabsdet = filled(batch, 0.0);
    for (int64_t m = 0; m < batch_count(in[0].sizes); ++m) {
      const auto [lu, pivots] = lu_of(matrix_at(in[0], m), n);
      double s = 1.0, total = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        if (pivots[k] != k + 1) s = -s;
        s *= lu[k * n + k] > 0 ? 1.0 : -1.0;
        total += std::log(std::abs(lu[k * n + k]));
      }
      sign.values[m] = s;
      logabsdet.values[m] = total;
    }
    return std::vector<RefTensor>{sign, logabsdet};
  };
  for (const auto& [label, input] : std::vector<std::pair<const char*, InputSpec>>{
           {"[3,3] negative diagonal", dominant({3, 3}, -4.0, 30)},
           {"batched transposed [2,4,4] with row swaps", dominant({2, 4, 4}, 0.0, 31, Transposed)},
           {"strided [1,1]", dominant({1, 1}, 2.0, 32, Strided)},
           {"size-0 batch [0,2,2]", dominant({0, 2, 2}, 3.0, 33)}}) {
    Case c = solve_case("linalg_slogdet", label, {input}, {}, slogdet_reference);
    c.loss_outputs = 0b10;  // the sign is piecewise constant
    cases.push_back(c);
  }

  const Reference cholesky_reference = [](const std::vector<RefTensor>& in, const Attrs&) {
    const int64_t n = in[0].sizes[in[0].sizes.size() - 1];
    return std::vector<RefTensor>{over_batch(in[0].sizes, in[0].sizes, [&](int64_t m) {
      const Matrix a = matrix_at(in[0], m);
      Matrix l(a.size(), 0.0);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = j; i < n; ++i) {
          double value = a[i * n + j];
          for (int64_t p = 0; p < j; ++p) value -= l[i * n + p] * l[j * n + p];
          l[i * n + j] = i == j ? std::sqrt(value) : value / l[j * n + j];
        }
      return l;
    })};
  };
  for (const auto& [label, input] : std::vector<std::pair<const char*, InputSpec>>{
           {"[4,4]", positive_definite({4, 4}, 40)},
           {"batched transposed [2,3,3]", positive_definite({2, 3, 3}, 41, Transposed)},
           {"size-1 [1,1]", positive_definite({1, 1}, 42)},
           {"size-0 batch [0,2,2]", positive_definite({0, 2, 2}, 43)}}) {
    Case c = solve_case("linalg_cholesky", label, {input}, {}, cholesky_reference);
    c.gradcheck = false;  // the symmetric gradient: see coverage.cpp's kCoveredElsewhere
    cases.push_back(c);
  }

  for (const bool upper : {false, true})
    for (const bool unit : {false, true}) {
      const Reference triangular_reference = [upper, unit](const std::vector<RefTensor>& in, const Attrs&) {
        const int64_t n = in[0].sizes[in[0].sizes.size() - 1], k = in[1].sizes[in[1].sizes.size() - 1];
        return std::vector<RefTensor>{over_batch(in[1].sizes, in[1].sizes, [&](int64_t m) {
          return triangular_solve(matrix_at(in[0], m), matrix_at(in[1], m), n, k, upper, unit);
        })};
      };
      const Attrs attrs{{"upper", upper}, {"unitriangular", unit}};
      const std::string flags = std::string(upper ? "upper" : "lower") + (unit ? ", unit diagonal" : "");
      cases.push_back(solve_case("linalg_solve_triangular", ("[4,4] with [4,3], " + flags).c_str(),
                                 {dominant({4, 4}, 3.0, 50), {{4, 3}}}, attrs, triangular_reference));
      cases.push_back(solve_case("linalg_solve_triangular", ("batched transposed [2,3,3], strided B, " + flags).c_str(),
                                 {dominant({2, 3, 3}, -3.0, 51, Transposed), {{2, 3, 2}, real(), Strided}}, attrs,
                                 triangular_reference));
      cases.push_back(solve_case("linalg_solve_triangular", ("size-0 k [3,3] with [3,0], " + flags).c_str(),
                                 {dominant({3, 3}, 3.0, 52), {{3, 0}}}, attrs, triangular_reference));
    }
  return cases;
}

const CaseRegistration registration("linalg_solve", linalg_solve_cases);

TEST_CASE("conformance: the solve family's ops match float64 references and finite differences") {
  run_cases(linalg_solve_cases());
}

}  // namespace
}  // namespace conformance::cases_linalg_solve
