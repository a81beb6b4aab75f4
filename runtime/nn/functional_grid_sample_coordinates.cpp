// grid_sample's coordinate rules as composites (see functional_grid_sample_coordinates.h). Each
// branch is a `where` whose taken side carries PyTorch's derivative (clip_coordinates_set_grad,
// reflect_coordinates_set_grad): 0 at and beyond a clamp bound, -1 on a reflected stretch.
#include "runtime/nn/functional_grid_sample_coordinates.h"

#include <climits>

#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::nn::functional::detail {

Tensor unnormalize_coordinate(const Tensor& coordinate, int64_t size, bool align_corners) {
  const auto extent = static_cast<double>(size);
  if (align_corners) return mul(div(add(coordinate, 1.0), 2.0), extent - 1.0);
  return div(sub(mul(add(coordinate, 1.0), extent), 1.0), 2.0);
}

namespace {

// min(S - 1, max(x, 0)) with PyTorch's gradient: 1 strictly inside, 0 at the bounds and beyond.
Tensor clip_coordinate(const Tensor& x, int64_t size) {
  const Tensor low = ops::scalar_like(0.0, x);
  const Tensor high = ops::scalar_like(static_cast<double>(size - 1), x);
  return where(le(x, low), low, where(ge(x, high), high, x));
}

// reflect_coordinates(x, twice_low, twice_high): the bounds are given doubled so that the
// half-integer edges of align_corners=false stay integers. With m = low and span = high - low:
// d = |x - m|, extra = fmod(d, span), flips = floor(d / span); x' = m + extra after an even number
// of flips, m + span - extra after an odd one. The sign of x - m is taken by a `where`, so its
// gradient is +1 at x = m, as PyTorch's (abs would give 0 there).
Tensor reflect_coordinate(const Tensor& x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return zeros_like(x);  // a one-element axis with align_corners
  const double low = static_cast<double>(twice_low) / 2.0;
  const double span = static_cast<double>(twice_high - twice_low) / 2.0;
  const Tensor shifted = sub(x, low);
  const Tensor distance = where(lt(shifted, ops::scalar_like(0.0, x)), neg(shifted), shifted);
  const Tensor extra = fmod(distance, span);
  const Tensor flips = floor(div(distance, span));
  const Tensor even = eq(fmod(flips, 2.0), ops::scalar_like(0.0, flips));
  return where(even, add(extra, low), add(rsub(extra, span), low));
}

// safe_downgrade_to_int_range: x > INT_MAX - 1, x < INT_MIN or not finite -> -100.
Tensor to_int_range(const Tensor& x) {
  const Tensor above = gt(x, ops::scalar_like(static_cast<double>(INT_MAX - 1), x));
  const Tensor below = lt(x, ops::scalar_like(static_cast<double>(INT_MIN), x));
  const Tensor outside = logical_or(logical_or(above, below), logical_not(isfinite(x)));
  return where(outside, ops::scalar_like(-100.0, x), x);
}

}  // namespace

Tensor pad_coordinate(const Tensor& coordinate, int64_t size, GridSamplePadding padding, bool align_corners) {
  Tensor padded = coordinate;
  if (padding == GridSamplePadding::Border) {
    padded = clip_coordinate(coordinate, size);
  } else if (padding == GridSamplePadding::Reflection) {
    // About the corner centres 0 and S - 1, or the outer edges -0.5 and S - 0.5.
    padded = align_corners ? reflect_coordinate(coordinate, 0, 2 * (size - 1))
                           : reflect_coordinate(coordinate, -1, 2 * size - 1);
    padded = clip_coordinate(padded, size);
  }
  return to_int_range(padded);
}

}  // namespace ember::nn::functional::detail
