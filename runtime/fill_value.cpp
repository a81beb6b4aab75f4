// The fill value and in-place checks of runtime/fill_value.h.
#include "runtime/fill_value.h"

#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"

namespace ember::detail {

Tensor fill_value(const Tensor& a, const Tensor& value, const char* function) {
  check(value.dim() == 0, "{}: expects a 0-d value tensor, got shape {}", function, value.sizes());
  return value.to(a.device()).to(a.dtype());
}

Tensor fill_value(const Tensor& a, double value, const char* function) {
  ops::check_value_fits(function, value, a.dtype());
  return scalar_tensor(value, {.dtype = a.dtype(), .device = a.device()});
}

void check_writable(const Tensor& a, const char* function) {
  check(!(grad_mode_enabled() && a.is_leaf() && a.requires_grad()),
        "{}: a leaf tensor that requires grad (shape {}) is used in an in-place operation; wrap the update in "
        "NoGradGuard",
        function, a.sizes());
}

}  // namespace ember::detail
