// dtype conversion for pointwise kernels.
#include "kernels/cpu/binary_kernels.h"

#include "runtime/dispatch.h"

namespace ember::cpu {

Tensor as_dtype(const Tensor& tensor, DType dtype) {
  if (tensor.dtype() == dtype) return tensor;
  NoGradGuard no_grad;  // kernels never record history
  return tensor.to(dtype);
}

int unrounded_scalar_operand(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.dtype() != kBFloat16 && out.dtype() != kFloat16) return -1;
  if (a.dim() == 0 && a.dtype() != out.dtype() && a.device().is_cpu()) return 0;
  if (b.dim() == 0 && b.dtype() != out.dtype() && b.device().is_cpu()) return 1;
  return -1;
}

double scalar_value(const Tensor& scalar) {
  internal_assert(scalar.numel() == 1 && scalar.device().is_cpu(), "scalar_value needs one CPU element");
  return dispatch_dtype(scalar.dtype(), [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(static_cast<compute_t<T>>(*static_cast<const T*>(scalar.raw_data_ptr())));
  });
}

}  // namespace ember::cpu
