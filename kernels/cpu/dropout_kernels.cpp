// CPU dropout: the mask from one Philox word per element (a block per four elements), then
// y = x * mask * scale.
#include "kernels/cpu/dropout_kernels.h"

#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/philox_stream.h"
#include "kernels/cpu/pointwise_loop.h"
#include "kernels/dropout.h"

namespace ember::cpu {

void dropout_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const double p = call.attrs.get<double>("p");
  const uint64_t seed = static_cast<uint64_t>(call.attrs.get<int64_t>("seed"));
  const uint64_t offset = static_cast<uint64_t>(call.attrs.get<int64_t>("offset"));
  const Tensor& mask = outputs[1];
  bool* keep = mask.data_ptr<bool>();
  const int64_t numel = mask.numel();
  parallel_ranges(numel, [&](int64_t begin, int64_t end) {
    PhiloxStream stream(seed, offset, static_cast<uint64_t>(begin));
    for (int64_t i = begin; i < end; ++i) keep[i] = dropout_keep_word(stream.next(), p);
  });

  dispatch_floating(input.dtype(), "dropout", [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T, bool>(outputs[0], fn::DropoutApply{dropout_scale(p)}, input, mask);
  });
}

}  // namespace ember::cpu
