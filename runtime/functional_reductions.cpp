// Reductions built from registry ops, in PyTorch's definitions: std, logsumexp, max/min along a
// dim with indices, and the vector norm. Autograd, CUDA, autocast and capture come from the ops
// they call; where PyTorch's own backward differs from the composite's (a root at 0), a ember::where()
// gives PyTorch's value.
#include <cmath>

#include "kernels/cpu/reduce_geometry.h"
#include "runtime/autocast.h"
#include "runtime/autocast_composites.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using ops::scalar_like;

// root(v), whose gradient PyTorch's std and norm backward set to 0 where the result is 0
// (masked_fill(result == 0, 0)). The root's own derivative is infinite there and the ops below
// it pass 0 (var's 2 (x - mean), a square's 2 x), so 0 * inf would make it NaN: without a
// gradient to record the root is taken as is, else zeros take the root of 1 and give 0.
template <typename Root>
Tensor root_flat_at_zero(const Tensor& v, Root root) {
  if (!grad_mode_enabled() || !v.requires_grad()) return root(v);
  const Tensor is_zero = eq(v, scalar_like(0.0, v));
  const Tensor rooted = root(ember::where(is_zero, scalar_like(1.0, v), v));
  return ember::where(is_zero, scalar_like(0.0, rooted), rooted);
}

void check_floating(const char* function, const Tensor& a) {
  check(is_floating(a.dtype()), "{}: expected a floating-point input, got {} (shape {})", function, a.dtype(),
        a.sizes());
}

// Reductions without an identity (max, min, the inf and negative norms) refuse an empty dim.
void check_reduced_dims_nonempty(const char* function, const char* what, const Tensor& a, uint32_t mask) {
  for (int d = 0; d < a.dim(); ++d)
    check(!(mask & (1u << d)) || a.sizes()[d] != 0,
          "{}: cannot compute {} over dim {} of size 0 (input shape {}): the operation has no identity", function,
          what, d, a.sizes());
}

std::tuple<Tensor, Tensor> extremum_along(const char* function, const Tensor& a, int64_t dim, bool keepdim,
                                          bool largest) {
  const int wrapped = wrap_dim(dim, a.dim(), function);
  check_reduced_dims_nonempty(function, largest ? "the maximum" : "the minimum", a,
                              a.dim() == 0 ? 0u : 1u << wrapped);
  // gather at argmax's index: the values are amax's, and the gradient reaches that element only.
  const Tensor indices = largest ? argmax(a, dim, true) : argmin(a, dim, true);
  const Tensor values = gather(a, dim, indices);
  if (keepdim || a.dim() == 0) return {values, indices};
  return {values.squeeze(dim), indices.squeeze(dim)};
}

// bfloat16 and float16, whose norm and std PyTorch accumulates in float32.
bool is_16bit(DType dtype) { return dtype == kBFloat16 || dtype == kFloat16; }

// The p = 0 "norm", the count of non-zeros. PyTorch's result has a grad_fn whose gradient is
// zero (norm_backward returns none for p = 0), so backward through it runs: an input that requires
// grad gets a term that is 0 with a zero gradient, sum(sign(a)) * 0 (sign is finite for inf and
// NaN, and its own gradient is zero).
Tensor count_nonzero_norm(const Tensor& a, const Dims& dims, bool keepdim) {
  const Tensor count = to_dtype(sum(ne(a, scalar_like(0.0, a)), dims, keepdim), a.dtype());
  if (!grad_mode_enabled() || !a.requires_grad()) return count;
  return add(count, mul(sum(sign(a), dims, keepdim), 0.0));
}

// The p-norm of a checked input, in its own dtype.
Tensor vector_norm(const Tensor& a, double p, const Dims& dims, bool keepdim) {
  if (std::isinf(p)) return p > 0.0 ? amax(abs(a), dims, keepdim) : amin(abs(a), dims, keepdim);
  if (p == 0.0) return count_nonzero_norm(a, dims, keepdim);
  if (p == 1.0) return sum(abs(a), dims, keepdim);
  if (p == 2.0) return root_flat_at_zero(sum(mul(a, a), dims, keepdim), [](const Tensor& v) { return sqrt(v); });
  Tensor terms = pow(abs(a), p);
  if (p < 1.0) {
    // For p < 1, |x|^p has an infinite slope at 0 and abs's gradient there is 0: their product
    // would be NaN where PyTorch's gradient is 0. A zero's term is the constant 0^p instead (0,
    // or inf for p < 0, which makes the norm 0 as before).
    const Tensor zero = eq(a, scalar_like(0.0, a));
    const Tensor others = pow(abs(where(zero, scalar_like(1.0, a), a)), p);
    terms = where(zero, scalar_like(std::pow(0.0, p), a), others);
  }
  return root_flat_at_zero(sum(terms, dims, keepdim), [p](const Tensor& v) { return pow(v, 1.0 / p); });
}

}  // namespace

Tensor std(const Tensor& a, const Dims& dims, int64_t correction, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_floating("std", a);
  cpu::reduce_mask(dims, a.dim(), "std");
  // PyTorch takes the root of a 16-bit input's variance in float32 and rounds once: a float16
  // variance is inf from 65520 on, where the deviation (from 256) is not.
  if (is_16bit(a.dtype())) return to_dtype(ember::std(to_dtype(a, kFloat32), dims, correction, keepdim), a.dtype());
  return root_flat_at_zero(var(a, dims, correction, keepdim), [](const Tensor& v) { return sqrt(v); });
}

Tensor logsumexp(const Tensor& a, const Dims& dims, bool keepdim, Where where) {
  CallSiteScope site(where);
  // Under autocast in float32 throughout (PyTorch's float32 list), not only from exp on.
  const Tensor x = detail::autocast_to_float32(is_floating(a.dtype()) ? a : to_dtype(a, kFloat32));
  const uint32_t mask = cpu::reduce_mask(dims, x.dim(), "logsumexp");
  if (x.numel() == 0) return log(sum(exp(x), dims, keepdim));  // no max to take; log(0) = -inf
  // The shift is the max without a gradient (its terms cancel), and 0 where the max is infinite,
  // so that a row of -inf gives log(0) = -inf, not -inf - -inf = NaN (PyTorch's rule).
  const Tensor maximum = amax(x, dims, true).detach();
  const Tensor infinite = eq(abs(maximum), scalar_like(INFINITY, maximum));
  const Tensor shift = ember::where(infinite, scalar_like(0.0, maximum), maximum);
  const Tensor logged = log(sum(exp(sub(x, shift)), dims, keepdim));
  return add(logged, keepdim ? shift : shift.view(cpu::reduced_sizes(x.sizes(), mask, false)));
}

std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  return extremum_along("max", a, dim, keepdim, true);
}

std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  return extremum_along("min", a, dim, keepdim, false);
}

// PyTorch's gradients follow: sign(x) for p = 1, split equally among ties for +-inf (amax's
// rule), x / norm for p = 2 and x |x|^(p-2) / norm^(p-1) otherwise, 0 where the norm is 0. The
// count of non-zeros (p = 0) has a zero gradient, as PyTorch's.
Tensor norm(const Tensor& a, double p, const Dims& dims, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_floating("norm", a);
  check(!std::isnan(p), "norm: p must be a number, got {}", p);
  const uint32_t mask = cpu::reduce_mask(dims, a.dim(), "norm");
  if (p < 0.0 || std::isinf(p)) check_reduced_dims_nonempty("norm", fmt::format("the {} norm", p).c_str(), a, mask);
  // PyTorch's norm kernels accumulate a 16-bit input in float32 and round the result once: powers
  // taken in 16 bits would round every term, and overflow float16 (300^2 is past its 65504).
  // Autocast keeps the float32 result: norm is on PyTorch's float32 list.
  if (is_16bit(a.dtype())) {
    const Tensor wide = vector_norm(to_dtype(a, kFloat32), p, dims, keepdim);
    return autocast_enabled() ? wide : to_dtype(wide, a.dtype());
  }
  return vector_norm(a, p, dims, keepdim);
}

}  // namespace ember
