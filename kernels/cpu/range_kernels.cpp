// CPU arange and linspace. This file is compiled with -ffp-contract=off (runtime/CMakeLists.txt):
// GCC would otherwise fuse `start + i * step` into one FMA, which rounds once where PyTorch,
// NumPy and ember's CUDA kernel (kernels/cuda/random.cu) round the product and the sum apart;
// float64 arange(0.1, 1, 0.1) then gave 0.6000000000000001 for 0.6, unlike all three.
#include "kernels/cpu/range_kernels.h"

#include "kernels/cpu/parallel_for.h"
#include "kernels/functors.h"

namespace ember::cpu {

void arange_kernel(const OpCall& call, TensorList& outputs) {
  const double start = call.attrs.get<double>("start");
  const double step = call.attrs.get<double>("step");
  dispatch_dtype(outputs[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (fn::detail::wraps<T>) {
      generate(outputs[0].data_ptr<T>(), outputs[0].numel(),
               [&](int64_t i) { return fn::detail::arange_integer<T>(start, step, i); });
    } else {
      generate(outputs[0].data_ptr<T>(), outputs[0].numel(),
               [&](int64_t i) { return fn::detail::convert<compute_t<T>>(start + static_cast<double>(i) * step); });
    }
  });
}

void linspace_kernel(const OpCall& call, TensorList& outputs) {
  const double start = call.attrs.get<double>("start");
  const double end = call.attrs.get<double>("end");
  const int64_t steps = call.attrs.get<int64_t>("steps");
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  dispatch_dtype(outputs[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    // Fill symmetrically from both ends so the last element is exactly `end`, like PyTorch; a
    // single step is `start`.
    const int64_t halfway = steps == 1 ? 1 : steps / 2;
    generate(outputs[0].data_ptr<T>(), outputs[0].numel(), [&](int64_t i) {
      const double value = i < halfway ? start + step * static_cast<double>(i)
                                         : end - step * static_cast<double>(steps - 1 - i);
      return fn::detail::convert<compute_t<T>>(value);
    });
  });
}

}  // namespace ember::cpu
