// The reductions of runtime/functional_math_more.h: nansum, nanmean, var_mean, std_mean, aminmax,
// median and nanmedian, each built from registry ops (median from a stable sort).
#include <cmath>

#include "kernels/cpu/reduce_geometry.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_math_more.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

void check_floating(const char* function, const Tensor& a) {
  check(is_floating(a.dtype()), "{}: expected a floating-point input, got {} (shape {})", function, a.dtype(),
        a.sizes());
}

// The number of NaNs along `dim`, kept as a dim of size 1 (int64; 0 for integer inputs).
Tensor nan_count_along(const Tensor& a, int dim) { return sum(isnan(a), Dims{dim}, true); }

// The element PyTorch's CPU median kernel picks along `dim` of a tensor with dims, as
// (values, indices) with `dim` kept. Its nth_element orders (value, index) pairs, so of equal
// values it takes the one a stable sort puts at the middle position; NaNs sort last, in input
// order. median: position (n - 1) / 2, or the first NaN (position n - nan_count) when there is
// one; nanmedian: position (n - nan_count - 1) / 2 truncated, 0 when all are NaN (the first NaN).
std::tuple<Tensor, Tensor> middle_along(const Tensor& a, int dim, bool ignore_nan) {
  const int64_t size = a.sizes()[dim];
  auto [sorted, order] = sort(a, dim, false, true);
  const Tensor nan_count = nan_count_along(a, dim);
  Tensor position;
  if (ignore_nan) {
    // (size - 1 - nan_count) / 2, truncated toward zero as C++ divides: -1 (all NaN) gives 0.
    const Tensor numerator = to_dtype(rsub(nan_count, static_cast<double>(size - 1)), kFloat64);
    position = to_dtype(trunc(div(numerator, 2.0)), kInt64);
  } else {
    const Tensor first_nan = rsub(nan_count, static_cast<double>(size));
    position = ember::where(gt(nan_count, scalar_like(0.0, nan_count)), first_nan,
                            scalar_like(static_cast<double>((size - 1) / 2), nan_count));
  }
  return {gather(sorted, dim, position), gather(order, dim, position)};
}

// `value` (a 0-d median of `a`) with PyTorch's gradient for a value that several elements may
// equal: grad / count to each element equal to it (or each NaN, for a NaN value). The value itself
// stays exactly the selected element: for a finite one it is m - sum(m - a over the ties) / count,
// whose subtracted term is exactly 0 (and keeps -0.0), for inf or NaN the ties' own mean (inf, NaN).
Tensor spread_over_ties(const Tensor& a, const Tensor& value) {
  if (!grad_mode_enabled() || !a.requires_grad()) return value;
  const Tensor selected = value.detach();
  const Tensor ties = logical_or(eq(a, selected), logical_and(isnan(a), isnan(selected)));
  const Tensor count = to_dtype(sum(ties), a.dtype());
  const Tensor zero = scalar_like(0.0, a);
  const Tensor finite_form = sub(selected, div(sum(ember::where(ties, sub(selected, a), zero)), count));
  const Tensor other_form = div(sum(ember::where(ties, a, zero)), count);
  return ember::where(isfinite(selected), finite_form, other_form);
}

Tensor median_of_all(const char* function, const Tensor& a, bool ignore_nan) {
  if (a.numel() == 0) {
    // PyTorch returns NaN converted to the input's dtype, which an integer cannot hold.
    check(is_floating(a.dtype()), "{}: an empty {} tensor (shape {}) has no median, and NaN is not an integer",
          function, a.dtype(), a.sizes());
    return full({}, NAN, {.dtype = a.dtype(), .device = a.device()});
  }
  const Tensor values = std::get<0>(middle_along(a.reshape({a.numel()}), 0, ignore_nan));
  return spread_over_ties(a, values.squeeze(0));
}

std::tuple<Tensor, Tensor> median_along(const char* function, const Tensor& a, int64_t dim, bool keepdim,
                                        bool ignore_nan) {
  const int wrapped = wrap_dim(dim, a.dim(), function);
  check(a.dtype() != kBool, "{}: bool tensors are not supported along a dim (input shape {}), as in PyTorch", function,
        a.sizes());
  if (a.dim() == 0) return {clone(a), zeros({}, {.dtype = kInt64, .device = a.device()})};
  check(a.sizes()[wrapped] != 0,
        "{}: expected reduction dim {} to have non-zero size (input shape {}): the median of nothing is undefined",
        function, dim, a.sizes());
  auto [values, indices] = middle_along(a, wrapped, ignore_nan);
  if (keepdim) return {values, indices};
  return {values.squeeze(wrapped), indices.squeeze(wrapped)};
}

}  // namespace

Tensor nansum(const Tensor& a, const Dims& dims, bool keepdim, Where where) {
  CallSiteScope site(where);
  cpu::reduce_mask(dims, a.dim(), "nansum");
  if (!is_floating(a.dtype())) return sum(a, dims, keepdim);  // no NaNs; int64 like sum
  // where() passes the gradient to the non-NaN elements only, PyTorch's grad * ~isnan(a).
  return sum(ember::where(isnan(a), scalar_like(0.0, a), a), dims, keepdim);
}

Tensor nanmean(const Tensor& a, const Dims& dims, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_floating("nanmean", a);
  cpu::reduce_mask(dims, a.dim(), "nanmean");
  const Tensor count = sum(logical_not(isnan(a)), dims, keepdim);
  return div(nansum(a, dims, keepdim), to_dtype(count, a.dtype()));
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& a, const Dims& dims, int64_t correction, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_floating("var_mean", a);
  cpu::reduce_mask(dims, a.dim(), "var_mean");
  return {var(a, dims, correction, keepdim), mean(a, dims, keepdim)};
}

std::tuple<Tensor, Tensor> std_mean(const Tensor& a, const Dims& dims, int64_t correction, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_floating("std_mean", a);
  cpu::reduce_mask(dims, a.dim(), "std_mean");
  return {ember::std(a, dims, correction, keepdim), mean(a, dims, keepdim)};
}

std::tuple<Tensor, Tensor> aminmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  Dims dims;  // every dim
  if (dim) {
    const int wrapped = wrap_dim(*dim, a.dim(), "aminmax");
    if (a.dim() > 0) {
      check(a.sizes()[wrapped] != 0,
            "aminmax: expected reduction dim {} to have non-zero size (input shape {}): the operation has no identity",
            *dim, a.sizes());
      dims = Dims{wrapped};
    }
  } else {
    check(a.numel() > 0,
          "aminmax: cannot compute aminmax over an empty tensor (shape {}): the operation has no identity", a.sizes());
  }
  return {amin(a, dims, keepdim), amax(a, dims, keepdim)};
}

Tensor median(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return median_of_all("median", a, false);
}

std::tuple<Tensor, Tensor> median(const Tensor& a, int64_t dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  return median_along("median", a, dim, keepdim, false);
}

Tensor nanmedian(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return median_of_all("nanmedian", a, true);
}

std::tuple<Tensor, Tensor> nanmedian(const Tensor& a, int64_t dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  return median_along("nanmedian", a, dim, keepdim, true);
}

}  // namespace ember
