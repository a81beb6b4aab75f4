// dtype conversion for pointwise kernels.
#include "kernels/cpu/binary_kernels.h"

#include "runtime/dispatch.h"

namespace ember::cpu {

Tensor as_dtype(const Tensor& tensor, DType dtype) {
  if (tensor.dtype() == dtype) return tensor;
  NoGradGuard no_grad;  // kernels never record history
  return tensor.to(dtype);
}

}  // namespace ember::cpu
