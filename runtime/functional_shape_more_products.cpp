// kron, linalg_cross / cross, outer / ger and dot / vdot (runtime/functional_shape_more.h) as broadcasting
// products of views or index_selects, so mul and sub give the gradients and the type promotion.
#include <algorithm>

#include "runtime/functional.h"

namespace ember {

namespace {

// `a` with each element of dim `dim` repeated `times` times in a row (torch.repeat_interleave),
// by index_select with the index 0, .., 0, 1, .., 1, ...
Tensor interleave(const Tensor& a, int dim, int64_t times) {
  const int64_t size = a.size(dim);
  const TensorOptions index_options{.dtype = kInt64, .device = a.device()};
  const Tensor index = reshape(arange(static_cast<double>(size), index_options), {size, 1});
  return index_select(a, dim, reshape(expand(index, {size, times}), {size * times}));
}

Tensor cross_along(const Tensor& a, const Tensor& b, int64_t dim, const char* function) {
  check(a.dim() == b.dim(), "{}: inputs must have the same number of dimensions, got shapes {} and {}", function,
        a.sizes(), b.sizes());
  check(a.dim() > 0, "{}: inputs must have at least 1 dim, got 0-d tensors (dim {})", function, dim);
  const int d = wrap_dim(dim, a.dim(), function);
  check(a.size(d) == 3 && b.size(d) == 3,
        "{}: inputs dimension {} must have length 3. Got {} and {} (shapes {} and {})", function, dim, a.size(d),
        b.size(d), a.sizes(), b.sizes());
  check(a.dtype() == b.dtype(), "{}: expected inputs of one dtype, got {} and {}", function, a.dtype(), b.dtype());
  check(a.dtype() != kBool, "{}: bool inputs are not supported (they cannot be subtracted)", function);
  const TensorOptions index_options{.dtype = kInt64, .device = a.device()};
  const Tensor next = from_vector<int64_t>({1, 2, 0}, {3}, index_options);
  const Tensor after = from_vector<int64_t>({2, 0, 1}, {3}, index_options);
  // result_k = a_{k+1} b_{k+2} - a_{k+2} b_{k+1}; mul broadcasts the other dims.
  return sub(mul(index_select(a, d, next), index_select(b, d, after)),
             mul(index_select(a, d, after), index_select(b, d, next)));
}

Tensor outer_product(const Tensor& a, const Tensor& b, const char* function) {
  check(a.dim() == 1 && b.dim() == 1, "{}: expected two 1-D tensors, got shapes {} and {}", function, a.sizes(),
        b.sizes());
  return mul(unsqueeze(a, 1), unsqueeze(b, 0));
}

Tensor dot_product(const Tensor& a, const Tensor& b, const char* function) {
  check(a.dim() == 1 && b.dim() == 1, "{}: 1D tensors expected, but got {}D and {}D tensors (shapes {} and {})",
        function, a.dim(), b.dim(), a.sizes(), b.sizes());
  check(a.numel() == b.numel(),
        "{}: inconsistent tensor size, expected tensors of the same number of elements, got "
        "{} and {}",
        function, a.numel(), b.numel());
  check(a.dtype() == b.dtype(), "{}: expected both vectors to have same dtype, but found {} and {}", function,
        a.dtype(), b.dtype());
  check(a.dtype() != kBool, "{}: bool inputs are not supported", function);
  // sum widens integers to int64; the narrowing back wraps as a sum in the dtype itself would.
  const Tensor total = sum(mul(a, b));
  return total.dtype() == a.dtype() ? total : to_dtype(total, a.dtype());
}

}  // namespace

Tensor kron(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  const int rank = std::max(a.dim(), b.dim());
  // Both shapes padded with leading 1s to the larger rank, as PyTorch's kron does.
  Dims padded_a = Dims::filled(rank - a.dim(), 1), padded_b = Dims::filled(rank - b.dim(), 1), result;
  for (const int64_t size : a.sizes()) padded_a.push_back(size);
  for (const int64_t size : b.sizes()) padded_b.push_back(size);
  bool overflowed = false;
  for (int d = 0; d < rank; ++d) {
    int64_t size = 0;
    overflowed = __builtin_mul_overflow(padded_a[d], padded_b[d], &size) || overflowed;
    result.push_back(size);
  }
  check(!overflowed && result.checked_product().has_value(),
        "kron: the result (shapes {} and {}) would have more elements than an int64 counts", a.sizes(), b.sizes());
  if (2 * rank <= Dims::kMaxRank) {
    // One broadcast multiply: a as [a_0, 1, a_1, 1, ..] times b as [1, b_0, 1, b_1, ..] holds
    // a[i] b[j] at (i_0, j_0, i_1, j_1, ..), which merges pairwise into the result's dims.
    Dims spread_a, spread_b;
    for (int d = 0; d < rank; ++d) {
      spread_a.push_back(padded_a[d]);
      spread_a.push_back(1);
      spread_b.push_back(1);
      spread_b.push_back(padded_b[d]);
    }
    return reshape(mul(reshape(a, spread_a), reshape(b, spread_b)), result);
  }
  // Too many dims for the pairs: a with each element repeated b_d times along every dim d, times b
  // tiled a_d times along it; both already have the result's shape.
  Tensor repeated = reshape(a, padded_a);
  for (int d = 0; d < rank; ++d)
    if (padded_b[d] != 1) repeated = interleave(repeated, d, padded_b[d]);
  return mul(repeated, repeat(reshape(b, padded_b), padded_a));
}

Tensor linalg_cross(const Tensor& a, const Tensor& b, int64_t dim, Where where) {
  CallSiteScope site(where);
  return cross_along(a, b, dim, "linalg_cross");
}

Tensor cross(const Tensor& a, const Tensor& b, int64_t dim, Where where) {
  CallSiteScope site(where);
  return cross_along(a, b, dim, "cross");
}

Tensor outer(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  return outer_product(a, b, "outer");
}

Tensor ger(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  return outer_product(a, b, "ger");
}

Tensor dot(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  return dot_product(a, b, "dot");
}

Tensor vdot(const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  return dot_product(a, b, "vdot");
}

}  // namespace ember
