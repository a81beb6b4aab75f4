// diff, trapezoid, cumulative_trapezoid, cov, corrcoef and renorm (runtime/functional_math_extra.h)
// as torch writes them: slices and subtractions, sums and cumsum, a mean-centred mm, and a norm with
// where, so the gradients are the ops'.
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

// The sizes of y without dim: the shape of an integral over an empty dim.
Dims sizes_without(const Tensor& y, int dim) {
  Dims sizes;
  for (int d = 0; d < y.dim(); ++d)
    if (d != dim) sizes.push_back(y.size(d));
  return sizes;
}

// Sample points x seen with y's dims: a 1-D x lies along dim, a shorter x gains leading 1s.
Tensor points_along(const Tensor& y, const Tensor& x, int dim, const char* function) {
  check(y.dtype() != kBool && x.dtype() != kBool, "{}: received a bool input for `x` or `y`, but bool is not supported",
        function);
  if (x.dim() == 1) {
    check(x.size(0) == y.size(dim),
          "{}: There must be one `x` value for each sample point, got {} x values for dim {} of size {} (y shape {})",
          function, x.size(0), dim, y.size(dim), y.sizes());
    Dims sizes = Dims::filled(y.dim(), 1);
    sizes[dim] = x.size(0);
    return reshape(x, sizes);
  }
  if (x.dim() < y.dim()) {
    Dims sizes = Dims::filled(y.dim() - x.dim(), 1);
    for (const int64_t size : x.sizes()) sizes.push_back(size);
    return reshape(x, sizes);
  }
  return x;
}

// The scalar torch's cov divides by: the sum of the weights less the correction (in aweights'
// form with them), taken as 0 when it is <= 0.
Tensor clamped_divisor(const Tensor& divisor) {
  return where(le(divisor, scalar_like(0.0, divisor)), scalar_like(0.0, divisor), divisor);
}

void check_weights(const Tensor& w, const char* name, int64_t observations, bool integral) {
  check(w.dim() <= 1, "cov(): expected {} to have one or fewer dimensions but got {} with {} dimensions", name, name,
        w.dim());
  check(integral ? is_integral(w.dtype()) && w.dtype() != kBool : is_floating(w.dtype()),
        "cov(): expected {} to have {} dtype but got {} with {} dtype", name, integral ? "integral" : "floating point",
        name, w.dtype());
  check(w.numel() == observations,
        "cov(): expected {} to have the same numel as there are observations in the input but got {} != {}", name,
        w.numel(), observations);
  // A host read, as torch's is_scalar_tensor_true.
  check(observations == 0 || amin(w).item() >= 0.0, "cov(): {} cannot be negative", name);
}

}  // namespace

Tensor diff(const Tensor& a, int64_t n, int64_t dim, const Tensor& prepend, const Tensor& append, Where where) {
  CallSiteScope site(where);
  check(a.dim() >= 1, "diff: expects input to be at least one-dimensional, got a 0-d tensor");
  check(n >= 0, "diff: order must be non-negative but got {}", n);
  const int d = wrap_dim(dim, a.dim(), "diff");
  std::vector<Tensor> parts;
  for (const Tensor* part : {&prepend, &a, &append}) {
    if (!part->defined()) continue;
    check(part->dim() == a.dim(),
          "diff: expects prepend or append to be the same dimension as input, got shapes {} and input {}",
          part->sizes(), a.sizes());
    parts.push_back(*part);
  }
  Tensor result = parts.size() == 1 ? a : cat(parts, d);
  // Each step drops one element; once the dim is empty, the rest would change nothing.
  for (int64_t step = 0; step < n && result.size(d) > 0; ++step) {
    const int64_t length = result.size(d) - 1;
    const Tensor later = narrow(result, d, 1, length), earlier = narrow(result, d, 0, length);
    result = result.dtype() == kBool ? logical_xor(later, earlier) : sub(later, earlier);
  }
  return n == 0 ? clone(result) : result;
}

Tensor trapezoid(const Tensor& y, double dx, int64_t dim, Where where) {
  CallSiteScope site(where);
  const int d = wrap_dim(dim, y.dim(), "trapezoid");
  if (y.size(d) == 0) return zeros(sizes_without(y, d), {.dtype = y.dtype(), .device = y.device()});
  check(y.dtype() != kBool, "trapezoid: received a bool input for `y`, but bool is not supported");
  // (sum(y) - (y_first + y_last) / 2) dx: each inner sample counts whole, the two ends half.
  const Tensor ends = add(y.select(d, 0), y.select(d, -1));
  return mul(sub(sum(y, {d}), mul(ends, 0.5)), dx);
}

Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim, Where where) {
  CallSiteScope site(where);
  const int d = wrap_dim(dim, y.dim(), "trapezoid");
  if (y.size(d) == 0) return zeros(sizes_without(y, d), {.dtype = y.dtype(), .device = y.device()});
  const Tensor points = points_along(y, x, d, "trapezoid");
  const Tensor spacing = sub(slice(points, d, 1, points.size(d)), slice(points, d, 0, -1));
  const Tensor pair_sums = add(slice(y, d, 1, y.size(d)), slice(y, d, 0, -1));
  return div(sum(mul(spacing, pair_sums), {d}), 2.0);
}

Tensor trapz(const Tensor& y, double dx, int64_t dim, Where where) { return trapezoid(y, dx, dim, where); }
Tensor trapz(const Tensor& y, const Tensor& x, int64_t dim, Where where) { return trapezoid(y, x, dim, where); }

Tensor cumulative_trapezoid(const Tensor& y, double dx, int64_t dim, Where where) {
  CallSiteScope site(where);
  const int d = wrap_dim(dim, y.dim(), "cumulative_trapezoid");
  check(y.dtype() != kBool, "cumulative_trapezoid: received a bool input for `y`, but bool is not supported");
  // torch's dx / 2 is a Python float, which makes an integer y float32 even when it is whole.
  const Tensor values = is_floating(y.dtype()) ? y : to_dtype(y, kFloat32);
  const Tensor pair_sums = add(slice(values, d, 0, -1), slice(values, d, 1, y.size(d)));
  return cumsum(mul(pair_sums, dx / 2.0), d);
}

Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim, Where where) {
  CallSiteScope site(where);
  const int d = wrap_dim(dim, y.dim(), "cumulative_trapezoid");
  const Tensor points = points_along(y, x, d, "cumulative_trapezoid");
  const Tensor spacing = sub(slice(points, d, 1, points.size(d)), slice(points, d, 0, -1));
  const Tensor pair_sums = add(slice(y, d, 0, -1), slice(y, d, 1, y.size(d)));
  return cumsum(mul(div(spacing, 2.0), pair_sums), d);
}

Tensor cov(const Tensor& a, int64_t correction, const Tensor& fweights, const Tensor& aweights, Where where) {
  CallSiteScope site(where);
  check(a.dim() <= 2, "cov(): expected input to have two or fewer dimensions but got an input with {} dimensions",
        a.dim());
  check(a.dtype() != kBool, "cov(): bool dtype is not supported for input");
  const Tensor observations_2d = a.dim() < 2 ? reshape(a, {1, -1}) : a;
  const int64_t observations = observations_2d.size(1);
  Tensor w;
  if (fweights.defined()) {
    check_weights(fweights, "fweights", observations, /*integral=*/true);
    w = fweights;
  }
  if (aweights.defined()) {
    check_weights(aweights, "aweights", observations, /*integral=*/false);
    w = w.defined() ? mul(w, aweights) : aweights;
  }
  // torch's products promote: an integer input counts as float32, and float aweights join in.
  DType result = is_floating(a.dtype()) ? a.dtype() : kFloat32;
  if (aweights.defined()) result = promote_types(result, aweights.dtype());
  const Tensor in = a.dtype() == result ? observations_2d : to_dtype(observations_2d, result);
  if (w.defined()) w = to_dtype(w, result);
  // The weighted means of the rows, then the rows centred on them.
  Tensor weight_sum;
  Tensor means;
  Tensor divisor;
  if (w.defined()) {
    weight_sum = sum(w);
    check(weight_sum.item() != 0.0, "cov(): weights sum to zero, can't be normalized");  // a host read, as torch's
    means = div(sum(mul(in, w), {1}), weight_sum);
    divisor = weight_sum;
    if (correction != 0) {
      const Tensor correction_term =
          aweights.defined() ? div(sum(mul(w, to_dtype(aweights, result))), weight_sum) : scalar_like(1.0, weight_sum);
      divisor = sub(weight_sum, mul(correction_term, static_cast<double>(correction)));
    }
    divisor = clamped_divisor(divisor);
  } else {
    means = mean(in, {1});
    // Known on the host: no read needed.
    const double count = static_cast<double>(observations - correction);
    divisor = scalar_tensor(count <= 0 ? 0.0 : count, {.dtype = result, .device = a.device()});
  }
  const Tensor centred = sub(in, unsqueeze(means, 1));
  const Tensor products = mm(centred, transpose(w.defined() ? mul(centred, w) : centred, 0, 1));
  return squeeze(div(products, divisor));
}

Tensor corrcoef(const Tensor& a, Where where) {
  CallSiteScope site(where);
  check(a.dim() <= 2, "corrcoef(): expected input to have two or fewer dimensions but got an input with {} dimensions",
        a.dim());
  const Tensor c = cov(a);
  if (c.dim() == 0) return div(c, c);
  const Tensor stddev = sqrt(diagonal(c));
  const Tensor scaled = div(div(c, unsqueeze(stddev, 1)), unsqueeze(stddev, 0));
  return clamp(scaled, -1.0, 1.0);
}

Tensor renorm(const Tensor& a, double p, int64_t dim, double maxnorm, Where where) {
  CallSiteScope site(where);
  check(p > 0.0, "renorm: non-positive-norm not supported, got p = {}", p);
  check(maxnorm >= 0.0, "renorm: expected maxnorm to be >= 0 but got {}", maxnorm);
  check(a.dim() > 1, "renorm: input needs at least 2 dimensions, got {} dimensions (shape {})", a.dim(), a.sizes());
  check(is_floating(a.dtype()), "renorm: expected a floating-point input, got {} (shape {})", a.dtype(), a.sizes());
  const int d = wrap_dim(dim, a.dim(), "renorm");
  Dims others;
  for (int k = 0; k < a.dim(); ++k)
    if (k != d) others.push_back(k);
  // The norms and the scale in float32 for 16-bit inputs (torch's accumulate type); the scale is
  // rounded to a's dtype before the product, as torch's factor tensor is.
  const bool half = a.dtype() == kBFloat16 || a.dtype() == kFloat16;
  const Tensor norms = norm(half ? to_dtype(a, kFloat32) : a, p, others, /*keepdim=*/true);
  const Tensor scale = div(scalar_like(maxnorm, norms), add(norms, 1e-7));
  const Tensor factor = ember::where(gt(norms, scalar_like(maxnorm, norms)), scale, scalar_like(1.0, norms));
  return mul(a, factor.dtype() == a.dtype() ? factor : to_dtype(factor, a.dtype()));
}

}  // namespace ember
