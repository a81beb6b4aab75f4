// The CUDA running sum: one thread per line (o, i) of the [outer, length, inner] layout walks its
// `length` elements in order, so adjacent threads read adjacent columns (coalesced when inner > 1)
// and every result is the CPU kernel's: the same order, the same double accumulator.
#include "kernels/cuda/reduce_common.cuh"
#include "kernels/cuda/scan.h"
#include "kernels/reduce_functors.h"

namespace ember::cuda {

namespace {

template <typename T, typename Out, typename Acc>
__global__ void cumsum_kernel(const T* __restrict__ input, Out* __restrict__ output, ScanLayout layout, bool reverse) {
  const fn::SumReduce<Acc> add;
  const int64_t lines = layout.outer * layout.inner;
  for (int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; line < lines;
       line += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = line / layout.inner;
    const int64_t i = line % layout.inner;
    const int64_t base = o * layout.length * layout.inner + i;
    Acc total = add.identity();
    for (int64_t step = 0; step < layout.length; ++step) {
      const int64_t r = reverse ? layout.length - 1 - step : step;
      const int64_t at = base + r * layout.inner;
      total = add.combine(total, static_cast<Acc>(detail::load(input, at)));
      output[at] = detail::to_output<Out>(total);
    }
  }
}

}  // namespace

int launch_cumsum(DType dtype, const void* input, void* output, const ScanLayout& layout, bool reverse) {
  const int64_t lines = layout.outer * layout.inner;
  if (lines == 0 || layout.length == 0) return 0;
  constexpr int kThreads = 256;
  const unsigned blocks = detail::grid_for((lines + kThreads - 1) / kThreads);
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<detail::accumulate_t<T>, int64_t>) {
      cumsum_kernel<T, int64_t, int64_t><<<blocks, kThreads, 0, stream>>>(
          static_cast<const T*>(input), static_cast<int64_t*>(output), layout, reverse);
    } else {
      cumsum_kernel<T, T, double><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(input),
                                                                  static_cast<T*>(output), layout, reverse);
    }
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
