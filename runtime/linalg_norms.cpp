// linalg::pinv, matrix_rank, matrix_norm and cond (runtime/linalg_spectral.h): composites of
// svd / svdvals / eigh and pointwise ops, so they differentiate through the decompositions'
// backward rules.
#include <cmath>
#include <limits>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/linalg_spectral.h"

namespace ember::linalg {

namespace {

void check_matrices(const Tensor& A, const char* name) {
  check(A.dim() >= 2, "{}: The input tensor A must have at least 2 dimensions, got shape {}", name, A.sizes());
  check(is_floating(A.dtype()), "{}: Expected a floating point tensor as input. Got {} (shape {})", name, A.dtype(),
        A.sizes());
}

double epsilon_of(DType dtype) {
  return dtype == kFloat64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

// PyTorch's defaults: neither tolerance given: rtol = eps * max(m, n); only atol > 0: rtol = 0.
double default_rtol(const Tensor& A, std::optional<double> atol, std::optional<double> rtol) {
  if (rtol) return *rtol;
  if (atol && *atol > 0) return 0.0;
  return epsilon_of(A.dtype()) * static_cast<double>(std::max(A.sizes()[A.dim() - 2], A.sizes()[A.dim() - 1]));
}

// Which of `values` (singular values, or |eigenvalues|) [*, k] count: > max(atol, rtol * largest).
// A comparison only, so no gradient flows through the threshold.
Tensor kept_values(const Tensor& magnitudes, double atol, double rtol) {
  const Tensor largest = amax(magnitudes, {-1}, true).detach();
  return gt(magnitudes, maximum(full_like(largest, atol), largest * rtol));
}

// 1 / values where kept, else 0; the reciprocal sees 1 where not kept, so no inf reaches autograd.
Tensor inverted_where_kept(const Tensor& values, const Tensor& kept) {
  return where(kept, reciprocal(where(kept, values, ones_like(values))), zeros_like(values));
}

Tensor pinv_with(const Tensor& A, double atol, double rtol, bool hermitian) {
  if (A.numel() == 0) return zeros(A.transpose(-2, -1).sizes(), {.dtype = A.dtype(), .device = A.device()});
  if (hermitian) {
    const auto [values, vectors] = eigh(A);
    const Tensor inverted = inverted_where_kept(values, kept_values(abs(values), atol, rtol));
    return matmul(vectors * inverted.unsqueeze(-2), vectors.transpose(-2, -1));
  }
  const auto [u, s, vh] = svd(A, false);
  const Tensor inverted = inverted_where_kept(s, kept_values(s, atol, rtol));
  return matmul(vh.transpose(-2, -1) * inverted.unsqueeze(-2), u.transpose(-2, -1));
}

Tensor rank_with(const Tensor& A, double atol, double rtol, bool hermitian) {
  NoGradGuard no_grad;  // a count: no gradient
  if (A.numel() == 0)
    return zeros(Dims(std::span<const int64_t>(A.sizes().begin(), A.dim() - 2)),
                 {.dtype = kInt64, .device = A.device()});
  const Tensor magnitudes = hermitian ? abs(eigvalsh(A)) : svdvals(A);
  return sum(to_dtype(kept_values(magnitudes, atol, rtol), kInt64), {-1});
}

// The two matrix dims, wrapped and distinct, as PyTorch checks them.
std::pair<int64_t, int64_t> matrix_dims(const Tensor& A, const Dims& dim) {
  check(dim.size() == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got {}", dim);
  const int64_t first = wrap_dim(dim[0], A.dim(), "linalg.matrix_norm");
  const int64_t second = wrap_dim(dim[1], A.dim(), "linalg.matrix_norm");
  check(first != second, "linalg.matrix_norm: dims must be different. Got ({}, {})", dim[0], dim[1]);
  return {first, second};
}

// svdvals of the matrices in dims (first, second), reduced by `reduce` over the values, with the
// two dims kept as size 1 or dropped.
template <typename Reduce>
Tensor spectral_norm(const Tensor& A, int64_t first, int64_t second, bool keepdim, Reduce reduce) {
  const Tensor values = reduce(svdvals(movedim(A, Dims{first, second}, Dims{-2, -1})));
  if (!keepdim) return values;
  return values.unsqueeze(std::min(first, second)).unsqueeze(std::max(first, second));
}

// norm(A, order) * norm(A^-1, order) for square A, with A^-1 = V diag(1/S) U^T from the SVD; a
// singular matrix (S_min = 0) has condition number inf, as PyTorch's.
template <typename Order>
Tensor cond_through_inverse(const Tensor& A, Order order) {
  const int64_t rows = A.sizes()[A.dim() - 2], cols = A.sizes()[A.dim() - 1];
  check(rows == cols, "linalg.cond(ord={}): A must be batches of square matrices, but they are {} by {} matrices",
        order, rows, cols);
  const auto [u, s, vh] = svd(A, false);
  const Tensor zero = zeros_like(s);
  const Tensor singular = eq(amin(s, {-1}).detach(), zeros_like(amin(s, {-1})).detach());
  const Tensor safe = where(eq(s, zero), ones_like(s), s);
  const Tensor inverse = matmul(vh.transpose(-2, -1) / safe.unsqueeze(-2), u.transpose(-2, -1));
  const Tensor value = matrix_norm(A, order) * matrix_norm(inverse, order);
  return where(singular, full_like(value, std::numeric_limits<double>::infinity()), value);
}

}  // namespace

Tensor pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian, Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.pinv");
  return pinv_with(A, atol.value_or(0.0), default_rtol(A, atol, rtol), hermitian);
}

Tensor pinv(const Tensor& A, double rcond, bool hermitian, Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.pinv");
  return pinv_with(A, 0.0, rcond, hermitian);
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian,
                   Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.matrix_rank");
  return rank_with(A, atol.value_or(0.0), default_rtol(A, atol, rtol), hermitian);
}

Tensor matrix_rank(const Tensor& A, double tol, bool hermitian, Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.matrix_rank");
  return rank_with(A, tol, 0.0, hermitian);
}

Tensor matrix_norm(const Tensor& A, std::string_view ord, const Dims& dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.matrix_norm");
  const auto [first, second] = matrix_dims(A, dim);
  if (ord == "fro") return norm(A, 2.0, Dims{first, second}, keepdim);
  check(ord == "nuc", "linalg.matrix_norm: Order {} not supported (string orders are 'fro' and 'nuc')", ord);
  return spectral_norm(A, first, second, keepdim, [](const Tensor& s) { return sum(s, {-1}); });
}

Tensor matrix_norm(const Tensor& A, double ord, const Dims& dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.matrix_norm");
  const auto [first, second] = matrix_dims(A, dim);
  const double magnitude = std::abs(ord);
  check(magnitude == 1.0 || magnitude == 2.0 || std::isinf(ord),
        "linalg.matrix_norm: Order {} not supported (numeric orders are 1, -1, 2, -2, inf and -inf)", ord);
  if (magnitude == 2.0)
    return spectral_norm(A, first, second, keepdim,
                         [ord](const Tensor& s) { return ord > 0 ? amax(s, {-1}) : amin(s, {-1}); });
  // 1: the largest column sum of |a_ij| (sum over the rows' dim, then max over columns); inf: the
  // largest row sum. The negative orders take the smallest.
  const int64_t summed = magnitude == 1.0 ? first : second;
  const int64_t extremum = magnitude == 1.0 ? second : first;
  const Tensor sums = sum(abs(A), {summed}, true);
  const Tensor result = ord > 0 ? amax(sums, {extremum}, true) : amin(sums, {extremum}, true);
  return keepdim ? result : result.squeeze(std::max(first, second)).squeeze(std::min(first, second));
}

Tensor cond(const Tensor& A, std::optional<double> p, Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.cond");
  const double order = p.value_or(2.0);
  if (std::abs(order) != 2.0) return cond_through_inverse(A, order);
  const Tensor s = svdvals(A);
  return order > 0 ? amax(s, {-1}) / amin(s, {-1}) : amin(s, {-1}) / amax(s, {-1});
}

Tensor cond(const Tensor& A, std::string_view p, Where where) {
  CallSiteScope site(where);
  check_matrices(A, "linalg.cond");
  check(p == "fro" || p == "nuc", "linalg.cond: Order {} not supported (string orders are 'fro' and 'nuc')", p);
  return cond_through_inverse(A, p);
}

}  // namespace ember::linalg
