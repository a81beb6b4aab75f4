// Broadcast strides for the pointwise iterator.
#include "kernels/cpu/pointwise_loop.h"

namespace ember::cpu {

Dims broadcast_strides(const Tensor& tensor, const Dims& sizes) {
  const Dims& own_sizes = tensor.sizes();
  const Dims& own_strides = tensor.strides();
  const int lead = sizes.size() - own_sizes.size();
  internal_assert(lead >= 0, "pointwise input has more dims than the output");
  Dims strides = Dims::filled(sizes.size(), 0);
  for (int i = 0; i < own_sizes.size(); ++i)
    strides[lead + i] = own_sizes[i] == 1 ? 0 : own_strides[i];
  return strides;
}

}  // namespace ember::cpu
