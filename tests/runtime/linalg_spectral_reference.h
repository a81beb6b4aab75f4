// Float64 host references for the spectral linear-algebra tests: row-major matrices as vectors,
// products and norms in plain loops, and well-conditioned test inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "finite_difference.h"

namespace ember::testing {

struct HostMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> values;
  double operator()(int64_t i, int64_t j) const { return values[static_cast<size_t>(i * cols + j)]; }
};

// Matrix `index` of a [*, rows, cols] tensor, in float64.
inline HostMatrix host_matrix(const Tensor& batch, int64_t index = 0) {
  const int64_t rows = batch.sizes()[batch.dim() - 2], cols = batch.sizes()[batch.dim() - 1];
  const std::vector<double> all = values_of(batch);
  HostMatrix m{rows, cols, {}};
  m.values.assign(all.begin() + index * rows * cols, all.begin() + (index + 1) * rows * cols);
  return m;
}

// Vector `index` of a [*, length] tensor.
inline std::vector<double> host_vector(const Tensor& batch, int64_t index = 0) {
  const int64_t length = batch.sizes()[batch.dim() - 1];
  const std::vector<double> all = values_of(batch);
  return {all.begin() + index * length, all.begin() + (index + 1) * length};
}

inline HostMatrix product(const HostMatrix& a, const HostMatrix& b) {
  HostMatrix c{a.rows, b.cols, std::vector<double>(static_cast<size_t>(a.rows * b.cols), 0.0)};
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j) {
      double total = 0.0;
      for (int64_t l = 0; l < a.cols; ++l) total += a(i, l) * b(l, j);
      c.values[static_cast<size_t>(i * b.cols + j)] = total;
    }
  return c;
}

inline HostMatrix transpose(const HostMatrix& a) {
  HostMatrix t{a.cols, a.rows, std::vector<double>(a.values.size())};
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) t.values[static_cast<size_t>(j * a.rows + i)] = a(i, j);
  return t;
}

// a with column j scaled by d[j]: a diag(d).
inline HostMatrix scale_columns(const HostMatrix& a, const std::vector<double>& d) {
  HostMatrix s = a;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) s.values[static_cast<size_t>(i * a.cols + j)] *= d[static_cast<size_t>(j)];
  return s;
}

inline double max_difference(const HostMatrix& a, const HostMatrix& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  double worst = 0.0;
  for (size_t i = 0; i < a.values.size(); ++i) worst = std::max(worst, std::abs(a.values[i] - b.values[i]));
  return worst;
}

inline HostMatrix identity(int64_t n) {
  HostMatrix e{n, n, std::vector<double>(static_cast<size_t>(n * n), 0.0)};
  for (int64_t i = 0; i < n; ++i) e.values[static_cast<size_t>(i * n + i)] = 1.0;
  return e;
}

// The deviation of a's columns from an orthonormal set: max |a^T a - I|.
inline double orthonormality_error(const HostMatrix& a) {
  return max_difference(product(transpose(a), a), identity(a.cols));
}

// A symmetric float64 [*, n, n] tensor with well-separated eigenvalues: B + B^T + diag(0, 3, 6, ...).
inline Tensor symmetric_input(int64_t batch, int64_t n, uint32_t seed) {
  std::vector<double> values = small_values(batch * n * n, seed);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        const size_t lower = static_cast<size_t>(b * n * n + i * n + j),
                     upper = static_cast<size_t>(b * n * n + j * n + i);
        const double sum = values[lower] + values[upper] + (i == j ? 3.0 * static_cast<double>(i) : 0.0);
        values[lower] = values[upper] = sum;
      }
  return doubles(values, {batch, n, n});
}

}  // namespace ember::testing
