// Conformance cases for the decompositions linalg_qr, linalg_eigh and linalg_svd. Their vectors
// are unique only up to signs, so each case compares sign-free quantities (Case::compared_as):
// the reconstruction (Q R, V diag(w) V^T, U diag(S) Vh) against the input, the factors'
// orthonormality against I, R's lower part against 0, and the values against a cyclic-Jacobi
// float64 reference. Gradients of the raw outputs (their signs are locally constant); eigh reads
// one triangle, so its gradient is checked on A + A^T (Case::gradient_inputs), as PyTorch's is.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "reference.h"

namespace conformance::cases_linalg_spectral {
namespace {

// Matrix b of a [*, rows, cols] reference, row-major.
struct Matrices {
  int64_t count = 1, rows = 0, cols = 0;
  explicit Matrices(const Dims& sizes) {
    rows = sizes[sizes.size() - 2], cols = sizes[sizes.size() - 1];
    for (int d = 0; d + 2 < sizes.size(); ++d) count *= sizes[d];
  }
};

Dims with_tail(const Dims& sizes, int drop, std::vector<int64_t> tail) {
  Dims result(std::span<const int64_t>(sizes.begin(), sizes.size() - drop));
  for (int64_t size : tail) result.push_back(size);
  return result;
}

// c[b] = op(a)[b] op(x)[b] with a [*, m, l] (or its transpose) and x [*, l, n] (or its transpose).
RefTensor batched_product(const RefTensor& a, bool transpose_a, const RefTensor& x, bool transpose_x) {
  const Matrices ma(a.sizes), mx(x.sizes);
  const int64_t m = transpose_a ? ma.cols : ma.rows, l = transpose_a ? ma.rows : ma.cols;
  const int64_t n = transpose_x ? mx.rows : mx.cols;
  RefTensor c{.sizes = with_tail(a.sizes, 2, {m, n}),
              .values = std::vector<double>(static_cast<size_t>(ma.count * m * n))};
  for (int64_t b = 0; b < ma.count; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double total = 0.0;
        for (int64_t p = 0; p < l; ++p) {
          const double left = a.values[b * ma.rows * ma.cols + (transpose_a ? p * ma.cols + i : i * ma.cols + p)];
          const double right = x.values[b * mx.rows * mx.cols + (transpose_x ? j * mx.cols + p : p * mx.cols + j)];
          total += left * right;
        }
        c.values[b * m * n + i * n + j] = total;
      }
  return c;
}

// a with column j of each matrix scaled by d[b, j] (a diag(d)).
RefTensor scaled_columns(RefTensor a, const RefTensor& d) {
  const Matrices ma(a.sizes);
  const int64_t length = d.sizes.back();
  for (int64_t b = 0; b < ma.count; ++b)
    for (int64_t i = 0; i < ma.rows; ++i)
      for (int64_t j = 0; j < ma.cols && j < length; ++j)
        a.values[b * ma.rows * ma.cols + i * ma.cols + j] *= d.values[b * length + j];
  return a;
}

// The first `count` columns (or rows) of each matrix.
RefTensor leading(const RefTensor& a, int64_t count, bool columns) {
  const Matrices ma(a.sizes);
  const int64_t rows = columns ? ma.rows : count, cols = columns ? count : ma.cols;
  RefTensor out{.sizes = with_tail(a.sizes, 2, {rows, cols})};
  for (int64_t b = 0; b < ma.count; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) out.values.push_back(a.values[b * ma.rows * ma.cols + i * ma.cols + j]);
  return out;
}

RefTensor identities(const Dims& batch_sizes, int64_t n) {
  RefTensor out{.sizes = with_tail(batch_sizes, 0, {n, n})};
  const Matrices shape(out.sizes);
  for (int64_t b = 0; b < shape.count; ++b)
    for (int64_t i = 0; i < n * n; ++i) out.values.push_back(i % (n + 1) == 0 ? 1.0 : 0.0);
  return out;
}

// The elements below the diagonal (the rest zeroed): all 0 for an upper-triangular R.
RefTensor strictly_lower(RefTensor a) {
  const Matrices ma(a.sizes);
  for (int64_t b = 0; b < ma.count; ++b)
    for (int64_t i = 0; i < ma.rows; ++i)
      for (int64_t j = i; j < ma.cols; ++j) a.values[b * ma.rows * ma.cols + i * ma.cols + j] = 0.0;
  return a;
}

// Eigenvalues (ascending) of each symmetric matrix by cyclic Jacobi rotations, in float64.
RefTensor jacobi_eigenvalues(const RefTensor& symmetric) {
  const Matrices ms(symmetric.sizes);
  const int64_t n = ms.rows;
  RefTensor values{.sizes = with_tail(symmetric.sizes, 2, {n})};
  for (int64_t b = 0; b < ms.count; ++b) {
    std::vector<double> a(symmetric.values.begin() + b * n * n, symmetric.values.begin() + (b + 1) * n * n);
    for (int sweep = 0; sweep < 100; ++sweep) {
      double off = 0.0;
      for (int64_t p = 0; p < n; ++p)
        for (int64_t q = p + 1; q < n; ++q) off += a[p * n + q] * a[p * n + q];
      if (off < 1e-30) break;
      for (int64_t p = 0; p < n; ++p)
        for (int64_t q = p + 1; q < n; ++q) {
          if (a[p * n + q] == 0.0) continue;
          // The rotation in the (p, q) plane that zeroes a_pq.
          const double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * a[p * n + q]);
          const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
          const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
          for (int64_t k = 0; k < n; ++k) {  // columns p, q
            const double akp = a[k * n + p], akq = a[k * n + q];
            a[k * n + p] = c * akp - s * akq, a[k * n + q] = s * akp + c * akq;
          }
          for (int64_t k = 0; k < n; ++k) {  // rows p, q
            const double apk = a[p * n + k], aqk = a[q * n + k];
            a[p * n + k] = c * apk - s * aqk, a[q * n + k] = s * apk + c * aqk;
          }
        }
    }
    std::vector<double> diagonal;
    for (int64_t i = 0; i < n; ++i) diagonal.push_back(a[i * n + i]);
    std::sort(diagonal.begin(), diagonal.end());
    values.values.insert(values.values.end(), diagonal.begin(), diagonal.end());
  }
  return values;
}

// The symmetric matrix eigh sees: the lower (or upper) triangle mirrored.
RefTensor mirrored(RefTensor a, bool upper) {
  const Matrices ma(a.sizes);
  for (int64_t b = 0; b < ma.count; ++b)
    for (int64_t i = 0; i < ma.rows; ++i)
      for (int64_t j = 0; j < i; ++j) {
        double* base = a.values.data() + b * ma.rows * ma.rows;
        if (upper)
          base[i * ma.rows + j] = base[j * ma.rows + i];
        else
          base[j * ma.rows + i] = base[i * ma.rows + j];
      }
  return a;
}

constexpr Tolerance kFloat32Decomposition{2e-4, 2e-5};
constexpr Tolerance kFloat64Decomposition{1e-9, 1e-11};

Case qr_case(const Dims& sizes, int64_t mode, Layout layout, bool gradcheck) {
  return Case{.op = "linalg_qr",
              .label = fmt::format("{} mode {} layout {}", sizes, mode, static_cast<int>(layout)),
              .inputs = {{.sizes = sizes, .layout = layout}},
              .attrs = {{"mode", mode}},
              .reference =
                  [](const std::vector<RefTensor>& in, const Attrs& attrs) {
                    const Matrices ma(in[0].sizes);
                    const int64_t q_cols = attrs.get<int64_t>("mode") == 1 ? ma.rows : std::min(ma.rows, ma.cols);
                    return std::vector<RefTensor>{in[0], identities(with_tail(in[0].sizes, 2, {}), q_cols),
                                                  RefTensor{.sizes = {}, .values = {0.0}}};
                  },
              .float32 = kFloat32Decomposition,
              .float64 = kFloat64Decomposition,
              .gradcheck = gradcheck,
              .gradient = {1e-5, 1e-6},
              .compared_as =
                  [](const std::vector<RefTensor>& out) {
                    const RefTensor lower = strictly_lower(out[1]);
                    const double worst =
                        *std::max_element(lower.values.begin(), lower.values.end(),
                                          [](double a, double b) { return std::abs(a) < std::abs(b); });
                    const int64_t k = std::min(out[0].sizes.back(), out[1].sizes[out[1].sizes.size() - 2]);
                    const RefTensor q = leading(out[0], k, true);
                    return std::vector<RefTensor>{batched_product(q, false, leading(out[1], k, false), false),
                                                  batched_product(q, true, q, false),
                                                  RefTensor{.sizes = {}, .values = {worst}}};
                  }};
}

Case eigh_case(const Dims& sizes, bool upper, Layout layout) {
  return Case{.op = "linalg_eigh",
              .label = fmt::format("{} upper {} layout {}", sizes, upper, static_cast<int>(layout)),
              .inputs = {{.sizes = sizes, .layout = layout}},
              .attrs = {{"upper", upper}, {"compute_v", true}},
              .reference =
                  [](const std::vector<RefTensor>& in, const Attrs& attrs) {
                    const RefTensor symmetric = mirrored(in[0], attrs.get<bool>("upper"));
                    const int64_t n = symmetric.sizes.back();
                    return std::vector<RefTensor>{jacobi_eigenvalues(symmetric), symmetric,
                                                  identities(with_tail(symmetric.sizes, 2, {}), n)};
                  },
              .float32 = kFloat32Decomposition,
              .float64 = kFloat64Decomposition,
              .gradient = {1e-5, 1e-6},
              .compared_as =
                  [](const std::vector<RefTensor>& out) {
                    const RefTensor& v = out[1];
                    return std::vector<RefTensor>{out[0], batched_product(scaled_columns(v, out[0]), false, v, true),
                                                  batched_product(v, true, v, false)};
                  },
              .gradient_inputs =
                  [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[0].transpose(-2, -1)}; }};
}

Case svd_case(const Dims& sizes, bool full, Layout layout) {
  return Case{.op = "linalg_svd",
              .label = fmt::format("{} full {} layout {}", sizes, full, static_cast<int>(layout)),
              .inputs = {{.sizes = sizes, .layout = layout}},
              .attrs = {{"full_matrices", full}, {"compute_uv", true}},
              .reference =
                  [](const std::vector<RefTensor>& in, const Attrs& attrs) {
                    // Singular values: square roots of the eigenvalues of the smaller Gram matrix, descending.
                    const Matrices ma(in[0].sizes);
                    const bool tall = ma.rows >= ma.cols;
                    RefTensor s = jacobi_eigenvalues(batched_product(in[0], tall, in[0], !tall));
                    const int64_t k = s.sizes.back();
                    for (int64_t b = 0; b < ma.count; ++b)
                      std::reverse(s.values.begin() + b * k, s.values.begin() + (b + 1) * k);
                    for (double& value : s.values) value = std::sqrt(std::max(value, 0.0));
                    const Dims batch = with_tail(in[0].sizes, 2, {});
                    const bool full = attrs.get<bool>("full_matrices");
                    return std::vector<RefTensor>{s, in[0], identities(batch, full ? ma.rows : k),
                                                  identities(batch, full ? ma.cols : k)};
                  },
              .float32 = kFloat32Decomposition,
              .float64 = {1e-8, 1e-10},
              .gradcheck = !full,
              .gradient = {1e-5, 1e-6},
              .compared_as =
                  [](const std::vector<RefTensor>& out) {
                    const int64_t k = out[1].sizes.back();
                    const RefTensor u = leading(out[0], k, true), vh = leading(out[2], k, false);
                    // S, U_k diag(S) Vh_k, and the orthonormality of all of U's columns and Vh's rows
                    // (m and n of them with full_matrices, k without).
                    return std::vector<RefTensor>{out[1], batched_product(scaled_columns(u, out[1]), false, vh, false),
                                                  batched_product(out[0], true, out[0], false),
                                                  batched_product(out[2], false, out[2], true)};
                  }};
}

std::vector<Case> linalg_spectral_cases() {
  std::vector<Case> cases;
  for (const Dims& sizes : {Dims{5, 3}, Dims{3, 5}, Dims{4, 4}, Dims{2, 3, 4}})
    for (int64_t mode : {0, 1})
      cases.push_back(qr_case(sizes, mode, Layout::Contiguous, mode == 0 || sizes[0] <= sizes[1]));
  cases.push_back(qr_case({4, 3}, 0, Layout::Transposed, true));
  cases.push_back(qr_case({2, 4, 3}, 0, Layout::Strided, false));
  cases.push_back(qr_case({2, 4, 3}, 0, Layout::Expanded, false));
  for (bool upper : {false, true}) {
    cases.push_back(eigh_case({4, 4}, upper, Layout::Contiguous));
    cases.push_back(eigh_case({2, 3, 3}, upper, Layout::Strided));
  }
  cases.push_back(eigh_case({5, 5}, false, Layout::Transposed));
  for (const Dims& sizes : {Dims{5, 3}, Dims{3, 5}, Dims{4, 4}, Dims{2, 4, 3}})
    for (bool full : {false, true}) cases.push_back(svd_case(sizes, full, Layout::Contiguous));
  cases.push_back(svd_case({3, 4}, false, Layout::Transposed));
  cases.push_back(svd_case({2, 4, 3}, false, Layout::Expanded));
  return cases;
}

const CaseRegistration registration("linalg_spectral", linalg_spectral_cases);

TEST_CASE("conformance: linalg_spectral (qr, eigh, svd)") { run_cases(linalg_spectral_cases()); }

}  // namespace
}  // namespace conformance::cases_linalg_spectral
