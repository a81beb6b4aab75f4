// ember::cdist (functional_cdist.h): the arguments checked as ATen's cdist checks them, then either
// the direct form over the broadcast differences or, for p = 2, the matrix-product form. Where a
// formula's derivative is infinite or undefined (a root at 0, |d|^p at d = 0 for p < 1) a `where`
// feeds the other side a safe value, so the gradient there is PyTorch's 0, never NaN.
#include "runtime/functional_cdist.h"

#include <cmath>

#include "runtime/autocast_composites.h"
#include "runtime/dims.h"
#include "runtime/dtype.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

void check_arguments(const Tensor& x1, const Tensor& x2, double p) {
  check(x1.defined() && x2.defined(), "cdist: expected X1 and X2 to be defined");
  check(x1.dim() >= 2, "cdist: only supports at least 2D tensors, X1 got: {}D (shape {})", x1.dim(), x1.sizes());
  check(x2.dim() >= 2, "cdist: only supports at least 2D tensors, X2 got: {}D (shape {})", x2.dim(), x2.sizes());
  check(x1.size(-1) == x2.size(-1), "cdist: X1 and X2 must have the same number of columns. X1: {} X2: {}", x1.size(-1),
        x2.size(-1));
  check(is_floating(x1.dtype()), "cdist: only supports floating-point dtypes, X1 got: {}", x1.dtype());
  check(is_floating(x2.dtype()), "cdist: only supports floating-point dtypes, X2 got: {}", x2.dtype());
  check(p >= 0, "cdist: only supports non-negative p values, got p = {}", p);
  check(x1.device() == x2.device(), "cdist: X1 and X2 must be on the same device. X1: {} X2: {}", x1.device(),
        x2.device());
  check(x1.dtype() == x2.dtype(), "cdist: X1 and X2 must have the same dtype. X1: {} X2: {}", x1.dtype(), x2.dtype());
}

// where(s == 0, 0, root(s)) with root fed 1 where s == 0: the value 0 and a 0 gradient there.
template <typename Root>
Tensor root_or_zero(const Tensor& s, Root&& root) {
  const Tensor zero = ops::scalar_like(0.0, s);
  const Tensor at_zero = eq(s, zero);
  return where(at_zero, zero, root(where(at_zero, ops::scalar_like(1.0, s), s)));
}

// max |d| over the last dim. The value is amax's; the gradient goes whole to every column tied at
// the maximum (PyTorch's _cdist_backward, where amax's backward would split it): it flows through
// |d| - detach(|d|), which is exactly 0 in value. An infinite maximum passes no gradient (inf - inf).
Tensor chebyshev(const Tensor& magnitude) {
  const Tensor fixed = magnitude.detach();
  const Tensor largest = amax(fixed, {-1}, true);
  const Tensor tied = logical_and(eq(fixed, largest), isfinite(largest));
  const Tensor carrier = where(tied, sub(magnitude, fixed), ops::scalar_like(0.0, magnitude));
  return add(squeeze(largest, -1), sum(carrier, {-1}));
}

// The direct form: d = x1[..., i, :] - x2[..., j, :] broadcast to [*B, R1, R2, M].
Tensor direct_distance(const Tensor& x1, const Tensor& x2, double p) {
  const Tensor difference = sub(unsqueeze(x1, -2), unsqueeze(x2, -3));
  if (x1.size(-1) == 0) return sum(difference, {-1});  // no columns: zeros, as PyTorch's
  const Tensor magnitude = abs(difference);
  if (p == 0) return sum(clamp(ceil(magnitude), std::nullopt, 1.0), {-1});
  if (p == 1) return sum(magnitude, {-1});
  if (std::isinf(p)) return chebyshev(magnitude);
  if (p == 2) {
    return root_or_zero(sum(mul(difference, difference), {-1}), [](const Tensor& s) { return sqrt(s); });
  }
  // |d|^p with pow fed 1 where d = 0: for p < 1 its derivative there would be infinite.
  const Tensor zero = ops::scalar_like(0.0, magnitude);
  const Tensor at_zero = eq(magnitude, zero);
  const Tensor powered = where(at_zero, zero, pow(where(at_zero, ops::scalar_like(1.0, magnitude), magnitude), p));
  return root_or_zero(sum(powered, {-1}), [p](const Tensor& s) { return pow(s, 1.0 / p); });
}

// PyTorch's _euclidean_dist: [-2 a, |a|^2, 1] . [b, 1, |b|^2] = |a - b|^2, raised to 1e-30, then
// sqrt. The raise keeps the gradient (PyTorch's backward ignores its clamp_min_): below 1e-30 the
// value is 1e-30 + (s - detach(s)), exactly 1e-30, whose derivative w.r.t. s is still 1.
Tensor euclidean_by_products(const Tensor& x1, const Tensor& x2, const Dims& batch) {
  Dims shape1 = batch, shape2 = batch;
  shape1.push_back(x1.size(-2));
  shape1.push_back(x1.size(-1));
  shape2.push_back(x2.size(-2));
  shape2.push_back(x2.size(-1));
  const Tensor a = expand(x1, shape1);
  const Tensor b = expand(x2, shape2);
  const Tensor norm_a = sum(pow(a, 2.0), {-1}, true);
  const Tensor norm_b = sum(pow(b, 2.0), {-1}, true);
  const Tensor left = cat({mul(a, -2.0), norm_a, ones_like(norm_a)}, -1);
  const Tensor right = cat({b, ones_like(norm_b), norm_b}, -1);
  const Tensor squared = matmul(left, transpose(right, -1, -2));
  const Tensor floor_value = ops::scalar_like(1e-30, squared);
  const Tensor raised = where(lt(squared, floor_value), add(sub(squared, squared.detach()), floor_value), squared);
  return sqrt(raised);
}

}  // namespace

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, CdistComputeMode compute_mode, Where where) {
  CallSiteScope site(where);
  check_arguments(x1, x2, p);
  const Tensor a = detail::autocast_to_float32(x1);
  const Tensor b = detail::autocast_to_float32(x2);
  const Dims batch1(std::span<const int64_t>(a.sizes().begin(), a.sizes().end() - 2));
  const Dims batch2(std::span<const int64_t>(b.sizes().begin(), b.sizes().end() - 2));
  const Dims batch = broadcast_shapes(batch1, batch2, "cdist");
  const int64_t rows1 = a.size(-2);
  const int64_t rows2 = b.size(-2);
  // PyTorch's choice (Distance.cpp): empty inputs always take the direct form.
  const bool products =
      p == 2 && a.numel() > 0 && b.numel() > 0 &&
      (compute_mode == CdistComputeMode::UseMmForEuclidDist ||
       (compute_mode == CdistComputeMode::UseMmForEuclidDistIfNecessary && (rows1 > 25 || rows2 > 25)));
  Tensor result = products ? euclidean_by_products(a, b, batch) : direct_distance(a, b, p);
  Dims output = batch;
  output.push_back(rows1);
  output.push_back(rows2);
  // The direct form's broadcast already has this shape; an explicit one covers 0-size batches.
  return reshape(result, output);
}

}  // namespace ember
