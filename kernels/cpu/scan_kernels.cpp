// cumsum on the CPU, one slice along the scanned dim per call of for_each_slice's body.
#include "kernels/cpu/scan_kernels.h"

#include "kernels/cpu/reduce_geometry.h"
#include "kernels/reduce_functors.h"

namespace ember::cpu {

namespace {

template <typename Out, typename Acc, typename T>
void cumsum_typed(const Tensor& output, const Tensor& input, int dim, bool reverse) {
  Out* out = output.data_ptr<Out>();
  const T* data = input.data_ptr<T>();
  const fn::SumReduce<Acc> add;
  for_each_slice<2>(input.sizes(), {input.strides(), output.strides()}, dim,
                    [&](std::array<int64_t, 2> at, int64_t length, std::array<int64_t, 2> step) {
                      Acc total = add.identity();
                      for (int64_t j = 0; j < length; ++j) {
                        const int64_t i = reverse ? length - 1 - j : j;
                        const Acc value = static_cast<Acc>(static_cast<compute_t<T>>(data[at[0] + i * step[0]]));
                        total = add.combine(total, value);
                        out[at[1] + i * step[1]] = static_cast<Out>(total);
                      }
                    });
}

}  // namespace

void cumsum_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  const bool reverse = call.attrs.get<bool>("reverse");
  dispatch_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      cumsum_typed<T, double, T>(outputs[0], input, dim, reverse);
    } else {
      cumsum_typed<int64_t, int64_t, T>(outputs[0], input, dim, reverse);
    }
  });
}

}  // namespace ember::cpu
