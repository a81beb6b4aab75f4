// diag, diag_embed, diagflat, trace and eye (runtime/functional_shape_more.h). A diagonal is
// written with where() over a bool mask (i + offset == j), which routes the gradient back to the
// vector, and read with gather, whose gradient scatters it back; neither multiplies, so an inf or
// NaN off the diagonal never leaks into it.
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

// Bool [rows, cols]: true where column == row + offset.
Tensor diagonal_mask(int64_t rows, int64_t cols, int64_t offset, Device device) {
  const TensorOptions index_options{.dtype = kInt64, .device = device};
  const Tensor row = reshape(arange(static_cast<double>(rows), index_options), {rows, 1});
  const Tensor col = reshape(arange(static_cast<double>(cols), index_options), {1, cols});
  return eq(add(row, static_cast<double>(offset)), col);
}

// a [..., n] -> [..., N, N] with N = n + |offset|: a's last dim on the diagonal `offset` of the
// last two dims, zeros elsewhere. The element (i, i + offset) takes a[..., i] for offset >= 0 and
// (j - offset, j) takes a[..., j] below, so a padded to N by zeros at its end is broadcast down the
// columns (offset >= 0) or along the rows; the padding only ever meets the mask where it is false.
Tensor embed_last_dim(const Tensor& a, int64_t offset, const char* function) {
  // |offset| and n + |offset| must fit int64 (std::abs(INT64_MIN) and the sum overflow otherwise).
  int64_t size = 0;
  check(offset != std::numeric_limits<int64_t>::min() && !__builtin_add_overflow(a.size(-1), std::abs(offset), &size),
        "{}: offset {} with {} elements gives a matrix side past what an int64 counts", function, offset, a.size(-1));
  const Tensor padded = offset == 0 ? a : pad(a, {0, std::abs(offset)});
  const Tensor values = offset >= 0 ? unsqueeze(padded, -1) : unsqueeze(padded, -2);
  return where(diagonal_mask(size, size, offset, a.device()), values, ops::scalar_like(0.0, a));
}

}  // namespace

Tensor diag_embed(const Tensor& a, int64_t offset, int64_t dim1, int64_t dim2, Where where) {
  CallSiteScope site(where);
  check(a.dim() >= 1, "diag_embed: expected a tensor of at least 1 dim, got a 0-d tensor (offset {})", offset);
  check(a.dim() < Dims::kMaxRank,
        "diag_embed: the result would have {} dims (input shape {}): ember tensors have at most {}", a.dim() + 1,
        a.sizes(), Dims::kMaxRank);
  const int rank = a.dim() + 1;
  const int first = wrap_dim(dim1, rank, "diag_embed"), second = wrap_dim(dim2, rank, "diag_embed");
  check(first != second, "diag_embed: diagonal dimensions cannot be identical: dim1 {} and dim2 {} (input shape {})",
        dim1, dim2, a.sizes());
  const Tensor embedded = embed_last_dim(a, offset, "diag_embed");
  // PyTorch writes into a new contiguous tensor; the moved view of ours is copied to match, so
  // that a later view() accepts what it would accept in PyTorch.
  return contiguous(movedim(embedded, {rank - 2, rank - 1}, {first, second}));
}

Tensor diag(const Tensor& a, int64_t diagonal, Where where) {
  CallSiteScope site(where);
  check(a.dim() == 1 || a.dim() == 2, "diag: Supports 1D or 2D tensors. Got {}D (shape {})", a.dim(), a.sizes());
  if (a.dim() == 1) return embed_last_dim(a, diagonal, "diag");
  const int64_t rows = a.size(0), cols = a.size(1);
  // The diagonal starts at (first_row, first_col) and runs for `length` elements (0 when it lies
  // outside the matrix; the starts are clamped so the slices stay in range).
  const int64_t first_row = diagonal >= 0 ? 0 : (diagonal <= -rows ? rows : -diagonal);  // -INT64_MIN overflows
  const int64_t first_col = std::min(diagonal >= 0 ? diagonal : 0, cols);
  const int64_t length = std::max<int64_t>(0, std::min(rows - first_row, cols - first_col));
  const Tensor square = slice(slice(a, 0, first_row, first_row + length), 1, first_col, first_col + length);
  const TensorOptions index_options{.dtype = kInt64, .device = a.device()};
  const Tensor index = reshape(arange(static_cast<double>(length), index_options), {length, 1});
  return reshape(gather(square, 1, index), {length});
}

Tensor diagflat(const Tensor& a, int64_t offset, Where where) {
  CallSiteScope site(where);
  return embed_last_dim(reshape(a, {-1}), offset, "diagflat");
}

Tensor trace(const Tensor& a, Where where) {
  CallSiteScope site(where);
  check(a.dim() == 2, "trace: expected a matrix, but got a tensor with {} dims (shape {})", a.dim(), a.sizes());
  return sum(diag(a));
}

Tensor eye(int64_t n, TensorOptions options, Where where) { return eye(n, n, options, where); }

Tensor eye(int64_t n, int64_t m, TensorOptions options, Where where) {
  CallSiteScope site(where);
  check(n >= 0, "eye: n must be greater or equal to 0, got {} (m {})", n, m);
  check(m >= 0, "eye: m must be greater or equal to 0, got {} (n {})", m, n);
  const Tensor mask = diagonal_mask(n, m, 0, options.resolved_device());
  Tensor result = mask.to(options.resolved_dtype());
  if (options.requires_grad) result.requires_grad_();
  return result;
}

}  // namespace ember
