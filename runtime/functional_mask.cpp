// masked_fill, tril and triu as where() over a bool mask: where routes the gradient by the mask
// (zero where filled or cut, exactly PyTorch's grad.masked_fill / grad.tril), runs on every
// device and is captured by the compile stage. The in-place forms write the result back with
// copy_, whose backward passes it on.
#include <algorithm>

#include "runtime/dispatch.h"
#include "runtime/fill_value.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using detail::check_writable;
using detail::fill_value;

void check_bool_mask(const Tensor& mask, const char* function) {
  check(mask.dtype() == kBool, "{}: expected a bool mask, got {} (mask shape {})", function, mask.dtype(),
        mask.sizes());
}


Tensor masked(const Tensor& a, const Tensor& mask, const Tensor& value, const char* function) {
  check_bool_mask(mask, function);
  broadcast_shapes(a.sizes(), mask.sizes(), function);  // names the function, not where
  return where(mask, value, a);
}

Tensor& masked_in_place(Tensor& a, const Tensor& mask, const Tensor& value) {
  check_bool_mask(mask, "masked_fill_");
  check(broadcast_shapes(a.sizes(), mask.sizes(), "masked_fill_") == a.sizes(),
        "masked_fill_: mask of shape {} does not broadcast to the tensor's shape {} (in place, only the mask "
        "broadcasts)",
        mask.sizes(), a.sizes());
  check_writable(a, "masked_fill_");
  return a.copy_(where(mask, value, a));
}

// Where tril (lower) or triu keeps the elements of a [rows, cols] matrix: j - i <= diagonal, or
// >= diagonal. A bool [rows, cols] mask, broadcast over the batch dims: a quarter of a float32
// matrix's bytes, made by three small ops, against the O(rows * cols) of the op itself.
Tensor triangle_mask(const Tensor& a, int64_t diagonal, bool lower, const char* function) {
  check(a.dim() >= 2, "{}: expects a tensor with at least 2 dims, got shape {}", function, a.sizes());
  const int64_t rows = a.size(-2), cols = a.size(-1);
  // Past the matrix every diagonal keeps all or nothing; clamped, it is exact as a double.
  const int64_t clamped = std::clamp<int64_t>(diagonal, -rows - 1, cols + 1);
  const TensorOptions index_options{.dtype = kInt64, .device = a.device()};
  const Tensor offset = sub(arange(static_cast<double>(cols), index_options),
                            arange(static_cast<double>(rows), index_options).unsqueeze(1));
  const Tensor bound = scalar_tensor(static_cast<double>(clamped), index_options);
  return lower ? le(offset, bound) : ge(offset, bound);
}

Tensor triangle(const Tensor& a, int64_t diagonal, bool lower, const char* function) {
  return where(triangle_mask(a, diagonal, lower, function), a, ops::scalar_like(0.0, a));
}

Tensor& triangle_in_place(Tensor& a, int64_t diagonal, bool lower, const char* function) {
  const Tensor kept = triangle(a, diagonal, lower, function);
  check_writable(a, function);
  return a.copy_(kept);
}

}  // namespace

Tensor masked_fill(const Tensor& a, const Tensor& mask, double value, Where where) {
  CallSiteScope site(where);
  return masked(a, mask, fill_value(a, value, "masked_fill"), "masked_fill");
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value, Where where) {
  CallSiteScope site(where);
  return masked(a, mask, fill_value(a, value, "masked_fill"), "masked_fill");
}

Tensor& masked_fill_(Tensor& a, const Tensor& mask, double value, Where where) {
  CallSiteScope site(where);
  return masked_in_place(a, mask, fill_value(a, value, "masked_fill_"));
}

Tensor& masked_fill_(Tensor& a, const Tensor& mask, const Tensor& value, Where where) {
  CallSiteScope site(where);
  return masked_in_place(a, mask, fill_value(a, value, "masked_fill_"));
}

Tensor tril(const Tensor& a, int64_t diagonal, Where where) {
  CallSiteScope site(where);
  return triangle(a, diagonal, true, "tril");
}

Tensor triu(const Tensor& a, int64_t diagonal, Where where) {
  CallSiteScope site(where);
  return triangle(a, diagonal, false, "triu");
}

Tensor& tril_(Tensor& a, int64_t diagonal, Where where) {
  CallSiteScope site(where);
  return triangle_in_place(a, diagonal, true, "tril_");
}

Tensor& triu_(Tensor& a, int64_t diagonal, Where where) {
  CallSiteScope site(where);
  return triangle_in_place(a, diagonal, false, "triu_");
}

}  // namespace ember
