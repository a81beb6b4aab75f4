// What the solve-family tests share: well-conditioned and positive-definite random matrices, the
// largest elementwise difference, and float64 references written with plain loops (a cofactor
// determinant, LAPACK getf2's pivoting) that never call ember's linear algebra.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "finite_difference.h"
#include "runtime/ember.h"
#include "runtime/linalg.h"

namespace ember::linalg_test {

using testing::small_tensor;
using testing::values_of;

// Random values in +-[0.1, 1] plus `shift` on the diagonal: with shift >= n the matrix is
// strictly diagonally dominant, so far from singular.
inline Tensor shifted_eye(const Tensor& t, double shift) {
  const Tensor identity = eye(t.size(-1), {.dtype = t.dtype(), .device = t.device()});
  return add(t, mul(identity, shift));
}
inline Tensor well_conditioned(const Dims& sizes, uint32_t seed, DType dtype = kFloat64) {
  return shifted_eye(small_tensor(sizes, seed, dtype), static_cast<double>(sizes[sizes.size() - 1]));
}
// M M^T + n I: symmetric positive-definite.
inline Tensor positive_definite(const Dims& sizes, uint32_t seed, DType dtype = kFloat64) {
  const Tensor m = small_tensor(sizes, seed, dtype);
  return shifted_eye(matmul(m, transpose(m, -2, -1)), static_cast<double>(sizes[sizes.size() - 1]));
}

inline double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  const std::vector<double> x = values_of(a), y = values_of(b);
  double largest = 0.0;
  for (size_t i = 0; i < x.size(); ++i) largest = std::max(largest, std::abs(x[i] - y[i]));
  return std::isnan(largest) ? INFINITY : largest;
}

// Row-major n x n values.
inline double cofactor_det(const std::vector<double>& m, int64_t n) {
  if (n == 0) return 1.0;
  if (n == 1) return m[0];
  double total = 0.0;
  for (int64_t column = 0; column < n; ++column) {
    std::vector<double> minor;
    for (int64_t i = 1; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (j != column) minor.push_back(m[i * n + j]);
    total += (column % 2 == 0 ? 1.0 : -1.0) * m[column] * cofactor_det(minor, n - 1);
  }
  return total;
}

// getf2 on row-major values: the packed LU and the 1-based pivots, as LAPACK.
inline std::pair<std::vector<double>, std::vector<int>> reference_lu(std::vector<double> m, int64_t n) {
  std::vector<int> pivots(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::abs(m[i * n + k]) > std::abs(m[pivot * n + k])) pivot = i;
    pivots[k] = static_cast<int>(pivot + 1);
    for (int64_t j = 0; j < n; ++j) std::swap(m[k * n + j], m[pivot * n + j]);
    if (m[k * n + k] == 0.0) continue;
    for (int64_t i = k + 1; i < n; ++i) {
      m[i * n + k] /= m[k * n + k];
      for (int64_t j = k + 1; j < n; ++j) m[i * n + j] -= m[i * n + k] * m[k * n + j];
    }
  }
  return {m, pivots};
}

}  // namespace ember::linalg_test
