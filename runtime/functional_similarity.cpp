// normalize and cosine_similarity (torch.nn.functional's): composites of registry ops, so
// autograd, CUDA and capture come with them.
#include <optional>

#include "runtime/autocast_composites.h"
#include "runtime/dims.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember {

Tensor normalize(const Tensor& a, double p, int64_t dim, double eps, Where where) {
  CallSiteScope site(where);
  check(is_floating(a.dtype()), "normalize: expected a floating tensor, got {} of shape {}", a.dtype(), a.sizes());
  const int d = wrap_dim(dim, a.dim(), "normalize");
  return div(a, clamp(norm(a, p, {d}, true), eps, std::nullopt));
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps, Where where) {
  CallSiteScope site(where);
  const DType common = result_type(x1.dtype(), x1.dim() == 0, x2.dtype(), x2.dim() == 0);
  check(is_floating(common), "cosine_similarity: expected floating inputs, got {} and {} (shapes {} and {})",
        x1.dtype(), x2.dtype(), x1.sizes(), x2.sizes());
  const Dims shape = broadcast_shapes(x1.sizes(), x2.sizes(), "cosine_similarity");
  const int d = wrap_dim(dim, static_cast<int>(shape.size()), "cosine_similarity");
  // On PyTorch's autocast float32 list: 16-bit inputs are lifted under autocast.
  const Tensor a = detail::autocast_to_float32(to_dtype(x1, common)).expand(shape);
  const Tensor b = detail::autocast_to_float32(to_dtype(x2, common)).expand(shape);
  // Each input over its own length first, which keeps the result within [-1, 1]. The length is
  // raised to eps as PyTorch's clamp_min_ under no_grad does: the value is max(length, eps), the
  // gradient the length's own (the raise is a detached constant).
  const auto unit = [&](const Tensor& t) {
    const Tensor length = norm(t, 2.0, {d}, true);
    const Tensor fixed = length.detach();
    return div(t, add(length, sub(clamp(fixed, eps, std::nullopt), fixed)));
  };
  return sum(mul(unit(a), unit(b)), {d});
}

}  // namespace ember
