// index_fill, index_copy, masked_scatter and put as where() over a mask of the written positions:
// where routes the gradient (zero for a where written, as PyTorch's), and the written values come
// from index_add (index_copy, put) or index_select (masked_scatter), whose backward rules give
// the sources' gradients. A repeated index writes its last value (index_more::last_occurrences).
// The in-place forms write the result back with copy_, as masked_fill_.
#include "runtime/dispatch.h"
#include "runtime/fill_value.h"
#include "runtime/functional.h"
#include "runtime/functional_index_more.h"
#include "runtime/functional_index_more_common.h"
#include "runtime/host_elements.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/registry.h"

namespace ember {

namespace {

using detail::fill_value;

Tensor index_add_along(const Tensor& self, int dim, const Tensor& index, const Tensor& source) {
  static const OpDef& index_add = lookup_op("index_add");
  return dispatch_one(index_add, {self, index, source}, {{"dim", static_cast<int64_t>(dim)}});
}

// dim wrapped for a (a 0-d tensor takes dim 0 or -1), index checked and its negatives wrapped.
std::pair<int, Tensor> checked_index(const char* function, const Tensor& a, int64_t dim, const Tensor& index) {
  index_more::check_index_dtype(function, index, /*int32_too=*/true);
  check(index.dim() <= 1, "{}: index must be 0-d or 1-D, got shape {}", function, index.sizes());
  check(index.device() == a.device(), "{}: the input is on {} but the index on {}", function, a.device(),
        index.device());
  const int d = wrap_dim(dim, std::max(a.dim(), 1), function);
  const int64_t size = a.dim() == 0 ? 1 : a.size(d);
  index_more::check_index_range(function, index, size, fmt::format("dim {}", d).c_str());
  return {d, index_more::wrap_negative(index.reshape({-1}), size)};
}

Tensor filled(const char* function, const Tensor& a, int64_t dim, const Tensor& index, const Tensor& value) {
  const auto [d, wrapped] = checked_index(function, a, dim, index);
  return ember::where(index_more::slice_mask(a, d, wrapped), value, a);
}

Tensor copied(const char* function, const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source) {
  const auto [d, wrapped] = checked_index(function, a, dim, index);
  check(source.dtype() == a.dtype(), "{}: source has dtype {} but self has dtype {}", function, source.dtype(),
        a.dtype());
  bool matches =
      a.dim() == 0 ? source.numel() == 1 && wrapped.numel() == 1 && source.dim() <= 1 : source.dim() == a.dim();
  for (int k = 0; matches && k < a.dim(); ++k) matches = source.size(k) == (k == d ? wrapped.numel() : a.size(k));
  check(matches,
        "{}: source of shape {} must match self's shape {} except at dim {}, where it must be the index "
        "length {}",
        function, source.sizes(), a.sizes(), d, wrapped.numel());
  if (a.dim() == 0)  // as the one element of a 1-D tensor
    return copied(function, a.reshape({1}), 0, wrapped, source.reshape({1})).reshape({});
  // Only the last slice listed for a position is written (index_add then adds it to zeros).
  Dims keep_shape = Dims::filled(a.dim(), 1);
  keep_shape[d] = wrapped.numel();
  const Tensor kept =
      ember::where(index_more::last_occurrences(wrapped).reshape(keep_shape), source, zeros_like(source));
  const Tensor placed = index_add_along(zeros_like(a), d, wrapped, kept);
  return ember::where(index_more::slice_mask(a, d, wrapped), placed, a);
}

}  // namespace

Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, double value, Where where) {
  CallSiteScope site(where);
  return filled("index_fill", a, dim, index, fill_value(a, value, "index_fill"));
}

Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& value, Where where) {
  CallSiteScope site(where);
  return filled("index_fill", a, dim, index, fill_value(a, value, "index_fill"));
}

Tensor& index_fill_(Tensor& a, int64_t dim, const Tensor& index, double value, Where where) {
  CallSiteScope site(where);
  const Tensor result = filled("index_fill_", a, dim, index, fill_value(a, value, "index_fill_"));
  detail::check_writable(a, "index_fill_");
  return a.copy_(result);
}

Tensor& index_fill_(Tensor& a, int64_t dim, const Tensor& index, const Tensor& value, Where where) {
  CallSiteScope site(where);
  const Tensor result = filled("index_fill_", a, dim, index, fill_value(a, value, "index_fill_"));
  detail::check_writable(a, "index_fill_");
  return a.copy_(result);
}

Tensor index_copy(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, Where where) {
  CallSiteScope site(where);
  return copied("index_copy", a, dim, index, source);
}

Tensor& index_copy_(Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, Where where) {
  CallSiteScope site(where);
  const Tensor result = copied("index_copy_", a, dim, index, source);
  detail::check_writable(a, "index_copy_");
  return a.copy_(result);
}

Tensor masked_scatter(const Tensor& a, const Tensor& mask, const Tensor& source, Where where) {
  CallSiteScope site(where);
  check(mask.dtype() == kBool, "masked_scatter: expected a bool mask, got {} (mask shape {})", mask.dtype(),
        mask.sizes());
  check(source.dtype() == a.dtype(), "masked_scatter: source has dtype {} but self has dtype {}", source.dtype(),
        a.dtype());
  const Dims shape = broadcast_shapes(a.sizes(), mask.sizes(), "masked_scatter");
  const Tensor flat_mask = expand(mask, shape).reshape({-1});
  const int64_t available = source.numel();
  if (!dispatch_mode_active() && mask.device().is_cpu()) {
    const int64_t wanted = sum(flat_mask).item_int64();
    check(wanted <= available, "masked_scatter: the mask has {} true elements but source has only {} (source shape {})",
          wanted, available, source.sizes());
  }
  // Source behind one spare element at 0, which the false positions read: the true positions read
  // 1 + (how many true ones precede them), so too small a source is an index past the end, which
  // index_select's kernel refuses on every device.
  const Tensor spare = zeros({1}, {.dtype = a.dtype(), .device = a.device()});
  const Tensor padded = cat({spare, source.reshape({-1})}, 0);
  const Tensor position = cumsum(flat_mask, 0);  // int64: the count of true ones up to here
  const Tensor index = ember::where(flat_mask, position, ops::scalar_like(0.0, position));
  const Tensor gathered = index_select(padded, 0, index).reshape(shape);
  return ember::where(expand(mask, shape), gathered, a);
}

Tensor put(const Tensor& a, const Tensor& index, const Tensor& source, bool accumulate, Where where) {
  CallSiteScope site(where);
  index_more::check_index_dtype("put", index, /*int32_too=*/false);
  check(source.dtype() == a.dtype(), "put: source has dtype {} but self has dtype {}", source.dtype(), a.dtype());
  check(index.numel() == source.numel(),
        "put: expected source and index to have the same number of elements, got {} (source shape {}) and {} "
        "(index shape {})",
        source.numel(), source.sizes(), index.numel(), index.sizes());
  check(a.numel() > 0 || index.numel() == 0, "put: cannot put into an empty tensor of shape {} (index shape {})",
        a.sizes(), index.sizes());
  index_more::check_index_range("put", index, a.numel(), "the input's elements");
  const Tensor flat_a = a.reshape({-1});
  const Tensor wrapped = index_more::wrap_negative(index.reshape({-1}), a.numel());
  const Tensor flat_source = source.reshape({-1});
  if (accumulate) return index_add_along(flat_a, 0, wrapped, flat_source).reshape(a.sizes());
  const Tensor kept = ember::where(index_more::last_occurrences(wrapped), flat_source, zeros_like(flat_source));
  const Tensor placed = index_add_along(zeros_like(flat_a), 0, wrapped, kept);
  return ember::where(index_more::slice_mask(flat_a, 0, wrapped), placed, flat_a).reshape(a.sizes());
}

}  // namespace ember
