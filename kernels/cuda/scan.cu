// The CUDA running reductions: one thread per line (o, i) of the [outer, length, inner] layout
// walks its `length` elements in order, so adjacent threads read adjacent columns (coalesced when
// inner > 1) and every result is the CPU kernel's: the same order, the same functors
// (kernels/reduce_functors.h, kernels/scan_functors.h), the same double accumulator.
#include "kernels/cuda/reduce_common.cuh"
#include "kernels/cuda/scan.h"
#include "kernels/reduce_functors.h"
#include "kernels/scan_functors.h"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

struct Line {
  int64_t base;  // offset of the line's first element
  int64_t step;  // distance between its elements (inner)
};

__device__ __forceinline__ Line line_at(int64_t line, const ScanLayout& layout) {
  const int64_t o = line / layout.inner;
  const int64_t i = line % layout.inner;
  return {o * layout.length * layout.inner + i, layout.inner};
}

template <typename T, typename Out, typename Acc, typename Combine>
__global__ void scan_kernel(const T* __restrict__ input, Out* __restrict__ output, ScanLayout layout, bool reverse,
                            Combine step) {
  const int64_t lines = layout.outer * layout.inner;
  for (int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; line < lines;
       line += int64_t{gridDim.x} * blockDim.x) {
    const Line at = line_at(line, layout);
    Acc total = step.identity();
    for (int64_t j = 0; j < layout.length; ++j) {
      const int64_t r = reverse ? layout.length - 1 - j : j;
      const int64_t offset = at.base + r * at.step;
      total = step.combine(total, static_cast<Acc>(detail::load(input, offset)));
      output[offset] = detail::to_output<Out>(total);
    }
  }
}

template <typename T, bool Max>
__global__ void cumextremum_kernel(const T* __restrict__ input, T* __restrict__ values, int64_t* __restrict__ indices,
                                   ScanLayout layout) {
  const fn::RunningExtremumReplaces<detail::compute_t<T>, Max> replaces;
  const int64_t lines = layout.outer * layout.inner;
  for (int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; line < lines;
       line += int64_t{gridDim.x} * blockDim.x) {
    const Line at = line_at(line, layout);
    T best = input[at.base];
    int64_t best_index = 0;
    for (int64_t r = 0; r < layout.length; ++r) {
      const int64_t offset = at.base + r * at.step;
      const T candidate = input[offset];
      if (replaces(detail::load(input, offset), static_cast<detail::compute_t<T>>(best))) {
        best = candidate;
        best_index = r;
      }
      values[offset] = best;
      indices[offset] = best_index;
    }
  }
}

unsigned blocks_for(const ScanLayout& layout) {
  return detail::grid_for((layout.outer * layout.inner + kThreads - 1) / kThreads);
}

bool empty(const ScanLayout& layout) { return layout.outer * layout.inner == 0 || layout.length == 0; }

// cumsum and cumprod: floating inputs keep their dtype and accumulate in double (16-bit floats
// too, as the CPU), integers and bool become int64.
template <template <typename> class Reduce>
int launch_arithmetic(DType dtype, const void* input, void* output, const ScanLayout& layout, bool reverse) {
  if (empty(layout)) return 0;
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<detail::accumulate_t<T>, int64_t>) {
      scan_kernel<T, int64_t, int64_t><<<blocks_for(layout), kThreads, 0, stream>>>(
          static_cast<const T*>(input), static_cast<int64_t*>(output), layout, reverse, Reduce<int64_t>{});
    } else {
      scan_kernel<T, T, double><<<blocks_for(layout), kThreads, 0, stream>>>(
          static_cast<const T*>(input), static_cast<T*>(output), layout, reverse, Reduce<double>{});
    }
  });
  return detail::status_of_launch();
}

}  // namespace

int launch_cumsum(DType dtype, const void* input, void* output, const ScanLayout& layout, bool reverse) {
  return launch_arithmetic<fn::SumReduce>(dtype, input, output, layout, reverse);
}

int launch_cumprod(DType dtype, const void* input, void* output, const ScanLayout& layout) {
  return launch_arithmetic<fn::ProdReduce>(dtype, input, output, layout, false);
}

int launch_cumextremum(DType dtype, const void* input, void* values, int64_t* indices, const ScanLayout& layout,
                       bool max) {
  if (empty(layout)) return 0;
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    const auto* in = static_cast<const T*>(input);
    auto* out = static_cast<T*>(values);
    if (max) {
      cumextremum_kernel<T, true><<<blocks_for(layout), kThreads, 0, stream>>>(in, out, indices, layout);
    } else {
      cumextremum_kernel<T, false><<<blocks_for(layout), kThreads, 0, stream>>>(in, out, indices, layout);
    }
  });
  return detail::status_of_launch();
}

int launch_logcumsumexp(DType dtype, const void* input, void* output, const ScanLayout& layout, bool reverse) {
  if (empty(layout)) return 0;
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    scan_kernel<T, T, double><<<blocks_for(layout), kThreads, 0, stream>>>(
        static_cast<const T*>(input), static_cast<T*>(output), layout, reverse, fn::LogAddExp<double>{});
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
