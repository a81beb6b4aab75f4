// select_scatter, slice_scatter and diagonal_scatter: a with src where the view (select, slice,
// diagonal) would show it, as where() over a mask of those positions with src broadcast into
// them, so each input's gradient is the output's gradient where it landed (a: zero there).
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_index_more.h"
#include "runtime/functional_index_more_common.h"
#include "runtime/functional_shape_more.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

void check_src(const char* function, const Tensor& a, const Tensor& src, const Dims& expected) {
  check(src.sizes() == expected, "{}: expected src to have the shape {} of the embedded view of the input {}, got {}",
        function, expected, a.sizes(), src.sizes());
  check(src.dtype() == a.dtype(), "{}: src has dtype {} but the input has dtype {}", function, src.dtype(), a.dtype());
  check(src.device() == a.device(), "{}: src is on {} but the input on {}", function, src.device(), a.device());
}

// Python's clamping of a slice bound into [0, size].
int64_t clamp_bound(int64_t bound, int64_t size) {
  if (bound < 0) bound += size;
  return std::clamp<int64_t>(bound, 0, size);
}

Tensor positions(int64_t count, const Tensor& like) {
  return arange(static_cast<double>(count), {.dtype = kInt64, .device = like.device()});
}

}  // namespace

Tensor select_scatter(const Tensor& a, const Tensor& src, int64_t dim, int64_t index, Where where) {
  CallSiteScope site(where);
  check(a.dim() > 0, "select_scatter: cannot select from a 0-d tensor");
  const int d = wrap_dim(dim, a.dim(), "select_scatter");
  const int64_t size = a.size(d);
  check(index >= -size && index < size, "select_scatter: index {} is out of range for dim {} of size {} (input {})",
        index, d, size, a.sizes());
  Dims expected = a.sizes();
  expected.erase(d);
  check_src("select_scatter", a, src, expected);
  Dims mask_shape = Dims::filled(a.dim(), 1);
  mask_shape[d] = size;
  const Tensor mask = eq(positions(size, a), scalar_tensor(static_cast<double>(index < 0 ? index + size : index),
                                                           {.dtype = kInt64, .device = a.device()}));
  return ember::where(mask.reshape(mask_shape), src.unsqueeze(d), a);
}

Tensor slice_scatter(const Tensor& a, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step, Where where) {
  CallSiteScope site(where);
  check(a.dim() > 0, "slice_scatter: cannot slice a 0-d tensor");
  check(step > 0, "slice_scatter: slice step must be positive, got {}", step);
  const int d = wrap_dim(dim, a.dim(), "slice_scatter");
  const int64_t size = a.size(d);
  const int64_t first = clamp_bound(start.value_or(0), size);
  const int64_t last = std::max(first, clamp_bound(end.value_or(size), size));
  const int64_t count = (last - first + step - 1) / step;
  Dims expected = a.sizes();
  expected[d] = count;
  check_src("slice_scatter", a, src, expected);
  // Positions first, first + step, ..: the slice's elements along dim, where index_copy puts src.
  const Tensor index = add(mul(positions(count, a), ops::scalar_like(static_cast<double>(step), positions(1, a))),
                           ops::scalar_like(static_cast<double>(first), positions(1, a)));
  return index_copy(a, d, index, src);
}

Tensor diagonal_scatter(const Tensor& a, const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2, Where where) {
  CallSiteScope site(where);
  check_src("diagonal_scatter", a, src, diagonal(a, offset, dim1, dim2).sizes());  // diagonal checks the dims
  const int d1 = wrap_dim(dim1, a.dim(), "diagonal_scatter"), d2 = wrap_dim(dim2, a.dim(), "diagonal_scatter");
  // The plane last: [.., rows, cols], src [.., length] in the same order of the other dims.
  const Tensor plane = movedim(a, Dims{d1, d2}, Dims{-2, -1});
  const int64_t rows = plane.size(-2), cols = plane.size(-1), length = src.size(-1);
  // Element (i, i + offset) takes src[.., i] (offset >= 0); (j - offset, j) takes src[.., j] below.
  // src padded to the rows (or cols) broadcasts along the other dim; the mask keeps the diagonal.
  const bool by_row = offset >= 0;
  const int64_t span = by_row ? rows : cols;
  Tensor stretched = pad(src, {0, span - length});
  stretched = by_row ? stretched.unsqueeze(-1) : stretched.unsqueeze(-2);
  const Tensor row = positions(rows, a).unsqueeze(1), column = positions(cols, a).unsqueeze(0);
  const Tensor on_diagonal =
      eq(sub(column, row), scalar_tensor(static_cast<double>(offset), {.dtype = kInt64, .device = a.device()}));
  const Tensor result = ember::where(on_diagonal, stretched, plane);
  return contiguous(movedim(result, Dims{-2, -1}, Dims{d1, d2}));
}

}  // namespace ember
