// CPU dropout: the mask from one Philox word per element, then y = x * mask * scale.
#include "kernels/cpu/dropout_kernels.h"

#include <algorithm>

#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/pointwise_loop.h"
#include "kernels/dropout.h"

namespace ember::cpu {

namespace {

// Writes keep[i] for i in [begin, end). One Philox block yields four consecutive words, so each
// block is computed once rather than once per element; the words are exactly philox_word's.
void fill_mask(bool* keep, int64_t begin, int64_t end, uint64_t seed, uint64_t offset, double p) {
  int64_t i = begin;
  while (i < end) {
    const uint64_t position = offset + static_cast<uint64_t>(i);
    const PhiloxBlock block = philox4x32(seed, position >> 2, 0);
    for (uint64_t lane = position & 3; lane < 4 && i < end; ++lane, ++i)
      keep[i] = dropout_keep_word(block.values[lane], p);
  }
}

}  // namespace

void dropout_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const double p = call.attrs.get<double>("p");
  const uint64_t seed = static_cast<uint64_t>(call.attrs.get<int64_t>("seed"));
  const uint64_t offset = static_cast<uint64_t>(call.attrs.get<int64_t>("offset"));
  const Tensor& mask = outputs[1];
  bool* keep = mask.data_ptr<bool>();
  const int64_t numel = mask.numel();
  // Chunks have a fixed size, so the words each element sees never depend on the thread count.
  const int64_t chunks = (numel + kParallelGrain - 1) / kParallelGrain;
  parallel_for(chunks, chunks > 1, [&](int64_t chunk) {
    fill_mask(keep, chunk * kParallelGrain, std::min(numel, (chunk + 1) * kParallelGrain), seed, offset, p);
  });

  dispatch_floating(input.dtype(), "dropout", [&](auto zero) {
    using T = decltype(zero);
    pointwise_cpu<T, T, bool>(outputs[0], fn::DropoutApply{dropout_scale(p)}, input, mask);
  });
}

}  // namespace ember::cpu
