// quantile and nanquantile (runtime/functional_math_more.h): a stable sort along the reduced dim,
// the ranks q (n - 1) gathered from it and combined as PyTorch's quantile_compute does.
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_math_more.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

// q_on_host: q came as a double, already checked on the host (no tensor read, so no graph break).
void check_quantile_inputs(const char* function, const Tensor& a, const Tensor& q, bool q_on_host) {
  check(a.numel() > 0, "{}: the input tensor must be non-empty (shape {})", function, a.sizes());
  check(q.dim() <= 1, "{}: q must be a scalar or 1-D tensor, got shape {}", function, q.sizes());
  check(a.dtype() == kFloat32 || a.dtype() == kFloat64,
        "{}: the input tensor must be either float32 or float64, got {} (as PyTorch requires)", function, a.dtype());
  check(q.dtype() == a.dtype(), "{}: the q tensor must have the input's dtype {}, got {}", function, a.dtype(),
        q.dtype());
  check(q.device() == a.device(), "{}: the q tensor must be on the input's device {}, got {}", function, a.device(),
        q.device());
  // On the CPU only, as PyTorch: the check reads q on the host, a synchronization elsewhere.
  if (a.device() == kCPU && !q_on_host) {
    NoGradGuard no_grad;
    const bool in_range = all(logical_and(ge(q, scalar_like(0.0, q)), le(q, scalar_like(1.0, q)))).item<bool>();
    check(in_range, "{}: q values must be in the range [0, 1] (q of shape {})", function, q.sizes());
  }
}

// `a` sorted along the reduced dim, as [kept..., n]: the kept dims are the result's shape without
// q's dim (dim removed, or of size 1 with keepdim; none, or all of size 1, without a dim).
Tensor sorted_rows(const Tensor& a, std::optional<int64_t> dim, bool keepdim, const char* function) {
  Dims kept;
  Tensor rows;
  if (dim && a.dim() > 0) {
    const int wrapped = wrap_dim(*dim, a.dim(), function);
    for (int d = 0; d < a.dim(); ++d) {
      if (d != wrapped)
        kept.push_back(a.sizes()[d]);
      else if (keepdim)
        kept.push_back(1);
    }
    rows = a.unsqueeze(-1).transpose(wrapped, -1);  // the reduced dim last, a 1 in its place
  } else {
    if (dim) wrap_dim(*dim, a.dim(), function);  // a 0-d input takes dim 0 or -1
    if (keepdim) kept = Dims::filled(a.dim(), 1);
    rows = a.reshape({a.numel()});
  }
  const Tensor sorted = std::get<0>(sort(rows, -1, false, true));
  Dims shape = kept;
  shape.push_back(sorted.sizes()[sorted.dim() - 1]);
  return sorted.reshape(shape);
}

Tensor quantile_of(const char* function, const Tensor& a, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   QuantileInterpolation interpolation, bool ignore_nan, bool q_on_host) {
  check_quantile_inputs(function, a, q, q_on_host);
  const Tensor sorted = sorted_rows(a, dim, keepdim, function);
  const int64_t last_index = sorted.sizes()[sorted.dim() - 1] - 1;
  const Tensor q_row = q.reshape({q.numel()}).detach();
  Tensor ranks;
  {
    NoGradGuard no_grad;  // ranks select elements; the gradient flows through the gathered values
    const Tensor nans = isnan(sorted);
    if (ignore_nan) {
      // Ranks among the non-NaN values; with none, rank 0 (a NaN).
      const Tensor counted = to_dtype(sum(logical_not(nans), Dims{-1}, true), a.dtype());
      ranks = mul(q_row, sub(counted, 1.0));
      ranks = ember::where(lt(ranks, scalar_like(0.0, ranks)), scalar_like(0.0, ranks), ranks);
    } else {
      // Any NaN: the last rank, where the sort put the NaNs.
      const Tensor has_nan = any(nans, -1, true);
      ranks = ember::where(has_nan, scalar_like(static_cast<double>(last_index), q_row),
                           mul(q_row, static_cast<double>(last_index)));
    }
    if (interpolation == QuantileInterpolation::Lower) ranks = floor(ranks);
    if (interpolation == QuantileInterpolation::Higher) ranks = ceil(ranks);
    if (interpolation == QuantileInterpolation::Nearest) ranks = round(ranks);  // halves to even
  }
  const Tensor ranks_below = to_dtype(ranks, kInt64);
  Tensor result = gather(sorted, -1, ranks_below);
  if (interpolation == QuantileInterpolation::Linear || interpolation == QuantileInterpolation::Midpoint) {
    Tensor weights;
    Tensor ranks_above;
    {
      NoGradGuard no_grad;
      weights = interpolation == QuantileInterpolation::Midpoint ? full_like(ranks, 0.5)
                                                                 : sub(ranks, to_dtype(ranks_below, ranks.dtype()));
      ranks_above = to_dtype(ceil(ranks), kInt64);
    }
    result = lerp(result, gather(sorted, -1, ranks_above), weights);
  }
  if (q.dim() == 0) return result.squeeze(-1);
  return result.unsqueeze(0).transpose(0, -1).squeeze(-1);  // q's dim first
}

Tensor scalar_q(const char* function, double q, const Tensor& a) {
  check(q >= 0.0 && q <= 1.0, "{}: q must be in the range [0, 1] but got {}", function, q);
  return scalar_tensor(q, {.dtype = a.dtype(), .device = a.device()});
}

}  // namespace

Tensor quantile(const Tensor& a, double q, std::optional<int64_t> dim, bool keepdim,
                QuantileInterpolation interpolation, Where where) {
  CallSiteScope site(where);
  return quantile_of("quantile", a, scalar_q("quantile", q, a), dim, keepdim, interpolation, false, true);
}

Tensor quantile(const Tensor& a, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                QuantileInterpolation interpolation, Where where) {
  CallSiteScope site(where);
  return quantile_of("quantile", a, q, dim, keepdim, interpolation, false, false);
}

Tensor nanquantile(const Tensor& a, double q, std::optional<int64_t> dim, bool keepdim,
                   QuantileInterpolation interpolation, Where where) {
  CallSiteScope site(where);
  return quantile_of("nanquantile", a, scalar_q("nanquantile", q, a), dim, keepdim, interpolation, true, true);
}

Tensor nanquantile(const Tensor& a, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   QuantileInterpolation interpolation, Where where) {
  CallSiteScope site(where);
  return quantile_of("nanquantile", a, q, dim, keepdim, interpolation, true, false);
}

}  // namespace ember
