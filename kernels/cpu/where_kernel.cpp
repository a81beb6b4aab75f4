// The CPU kernel of where(condition, a, b): a select over three broadcast inputs.
#include "kernels/cpu/pointwise_kernels.h"
#include "kernels/functors.h"

namespace ember::cpu {

void where_cpu(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  const Tensor a_cast = as_dtype(a, out.dtype());
  const Tensor b_cast = as_dtype(b, out.dtype());
  dispatch_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, bool, T, T>(out, fn::Where{}, condition, a_cast, b_cast);
  });
}

}  // namespace ember::cpu
