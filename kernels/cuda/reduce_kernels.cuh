// The generic CUDA reduction over a dense [outer, reduce, inner] layout (see reduce.h), used by
// every reduction family file with a reducer: identity, combine (associative and commutative),
// lift (an element and its position r into an accumulator) and finish (accumulator -> value).
//   inner == 1: 8 threads, a warp or a 256-thread block (by group length) reduce each group;
//   inner  > 1: 32 adjacent columns x 8 rows of threads per block, so every load is coalesced.
// Long groups over few outputs are split: pass one writes partial accumulators in a fixed
// layout, pass two combines them. Every combine order depends on the shape only: deterministic.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <type_traits>

#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_common.cuh"
#include "kernels/reduce_functors.h"

namespace ember::cuda::detail {

constexpr int kBlock = 256;
constexpr int kColumnWidth = 32;                    // adjacent columns per block (one warp)
constexpr int kColumnRows = kBlock / kColumnWidth;  // rows of the group walked at once
constexpr int64_t kTargetBlocks = 1024;             // enough blocks to fill an H200 several times
constexpr int64_t kMinRowSplit = 4096;              // elements per split of a contiguous group
constexpr int64_t kMinColumnSplit = 256;            // rows per split of a column group
constexpr int64_t kMaxSplits = 1024;
constexpr int64_t kShortRowLimit = 256;             // groups up to this long get 8 threads each
constexpr int64_t kWarpRowLimit = 1024;             // groups up to this long get one warp each
constexpr int64_t kScratchPerAccumulator = 32;      // bytes; covers every reducer's accumulator

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How many pieces each group is split into: enough blocks in total, never tiny pieces.
inline int64_t split_count(const ReduceLayout& layout) {
  const bool rows = layout.inner == 1;
  const int64_t tiles = rows ? layout.outer : layout.outer * ceil_div(layout.inner, kColumnWidth);
  if (tiles == 0) return 1;  // no outputs: nothing is launched
  const int64_t most = ceil_div(layout.reduce, rows ? kMinRowSplit : kMinColumnSplit);
  int64_t splits = ceil_div(kTargetBlocks, tiles);
  if (splits > most) splits = most;
  if (splits > kMaxSplits) splits = kMaxSplits;
  return splits < 1 ? 1 : splits;
}

// A reducer from kernels/reduce_functors.h (sum, mean, max, min) lifted to the interface above.
template <typename AccType, template <typename> class Functor>
struct FunctorReducer {
  using Acc = AccType;
  Functor<Acc> functor;
  __device__ __forceinline__ Acc identity() const { return functor.identity(); }
  __device__ __forceinline__ Acc combine(Acc a, Acc b) const { return functor.combine(a, b); }
  template <typename Value> __device__ __forceinline__ Acc lift(Value value, int64_t) const {
    return static_cast<Acc>(value);
  }
  __device__ __forceinline__ Acc finish(Acc a, int64_t count) const { return functor.finish(a, count); }
};

template <typename Reducer> struct CombineOf {
  Reducer reducer;
  template <typename Acc> __device__ __forceinline__ Acc operator()(const Acc& a, const Acc& b) const {
    return reducer.combine(a, b);
  }
};

// Folds element r of a group into a thread's accumulator. Pass two combines partial
// accumulators; pass one lets a reducer with a cheaper per-element step than combine(acc,
// lift(x)) use it (a thread meets its elements in increasing r), then seal turns the thread's
// accumulator into the form combine takes.
template <bool FromPartial, typename In, typename Reducer>
__device__ __forceinline__ typename Reducer::Acc accumulate_at(const Reducer& reducer, typename Reducer::Acc acc,
                                                              const In* data, int64_t offset, int64_t r) {
  if constexpr (FromPartial) {
    return reducer.combine(acc, data[offset]);
  } else if constexpr (requires { reducer.accumulate(acc, load(data, offset), r); }) {
    return reducer.accumulate(acc, load(data, offset), r);
  } else {
    return reducer.combine(acc, reducer.lift(load(data, offset), r));
  }
}

template <bool FromPartial, typename Reducer>
__device__ __forceinline__ typename Reducer::Acc seal(const Reducer& reducer, typename Reducer::Acc acc) {
  if constexpr (!FromPartial && requires { reducer.seal(acc); }) {
    return reducer.seal(acc);
  } else {
    return acc;
  }
}

template <typename In, typename Out, typename Reducer> struct ReduceArgs {
  const In* input;
  Out* output;                        // final values, or
  typename Reducer::Acc* partial;     // partial accumulators when not null
  int64_t outer, count, inner, splits;
  int64_t finish_count;               // the group size finish divides by (the original reduce)
  Reducer reducer;
};

// inner == 1. Groups of `Group` threads (8, a warp or the whole block) each reduce one (row, split)
// item. The loop over items is uniform across the block, so the block-wide syncs are safe.
template <int Group, bool FromPartial, typename In, typename Out, typename Reducer>
__global__ void __launch_bounds__(kBlock) reduce_rows_kernel(ReduceArgs<In, Out, Reducer> args) {
  using Acc = typename Reducer::Acc;
  constexpr int kGroups = kBlock / Group;
  using GroupReduce = std::conditional_t<Group <= 32, cub::WarpReduce<Acc, Group>, cub::BlockReduce<Acc, kBlock>>;
  __shared__ typename GroupReduce::TempStorage storage[kGroups];
  const Reducer& reducer = args.reducer;
  const int group = threadIdx.x / Group;
  const int lane = threadIdx.x % Group;
  const int64_t items = args.outer * args.splits;
  const int64_t chunk = ceil_div(args.count, args.splits);
  for (int64_t first = int64_t{blockIdx.x} * kGroups; first < items; first += int64_t{gridDim.x} * kGroups) {
    const int64_t item = first + group;
    Acc result = reducer.identity();
    if (item < items) {
      const int64_t row = item / args.splits;
      const int64_t begin = (item % args.splits) * chunk;
      const int64_t end = begin + chunk < args.count ? begin + chunk : args.count;
      const In* data = args.input + row * args.count;
      // Four independent accumulators keep four loads in flight per thread.
      Acc a0 = reducer.identity(), a1 = reducer.identity(), a2 = reducer.identity(), a3 = reducer.identity();
      int64_t r = begin + lane;
      for (; r + 3 * Group < end; r += 4 * Group) {
        a0 = accumulate_at<FromPartial>(reducer, a0, data, r, r);
        a1 = accumulate_at<FromPartial>(reducer, a1, data, r + Group, r + Group);
        a2 = accumulate_at<FromPartial>(reducer, a2, data, r + 2 * Group, r + 2 * Group);
        a3 = accumulate_at<FromPartial>(reducer, a3, data, r + 3 * Group, r + 3 * Group);
      }
      for (; r < end; r += Group) a0 = accumulate_at<FromPartial>(reducer, a0, data, r, r);
      result = reducer.combine(reducer.combine(seal<FromPartial>(reducer, a0), seal<FromPartial>(reducer, a1)),
                               reducer.combine(seal<FromPartial>(reducer, a2), seal<FromPartial>(reducer, a3)));
    }
    result = GroupReduce(storage[group]).Reduce(result, CombineOf<Reducer>{reducer});
    if (lane == 0 && item < items) {
      if (args.partial != nullptr) {
        args.partial[item] = result;
      } else {
        args.output[item] = to_output<Out>(reducer.finish(result, args.finish_count));
      }
    }
    __syncthreads();  // the temp storage is reused by the next item
  }
}

// inner > 1. A block covers 32 adjacent columns of one outer index and one split; its 8 rows of
// threads stride through the group, then combine in row order through shared memory.
template <bool FromPartial, typename In, typename Out, typename Reducer>
__global__ void __launch_bounds__(kBlock) reduce_columns_kernel(ReduceArgs<In, Out, Reducer> args) {
  using Acc = typename Reducer::Acc;
  __shared__ Acc slots[kColumnRows][kColumnWidth];
  const Reducer& reducer = args.reducer;
  const int x = threadIdx.x % kColumnWidth;
  const int y = threadIdx.x / kColumnWidth;
  const int64_t tiles = ceil_div(args.inner, kColumnWidth);
  const int64_t items = args.outer * tiles * args.splits;
  const int64_t chunk = ceil_div(args.count, args.splits);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t split = item % args.splits;
    const int64_t tile = (item / args.splits) % tiles;
    const int64_t o = item / args.splits / tiles;
    const int64_t i = tile * kColumnWidth + x;
    const int64_t begin = split * chunk;
    const int64_t end = begin + chunk < args.count ? begin + chunk : args.count;
    Acc result = reducer.identity();
    if (i < args.inner) {
      for (int64_t r = begin + y; r < end; r += kColumnRows)
        result = accumulate_at<FromPartial>(reducer, result, args.input, (o * args.count + r) * args.inner + i, r);
      result = seal<FromPartial>(reducer, result);
    }
    slots[y][x] = result;
    __syncthreads();
    if (y == 0 && i < args.inner) {
      for (int row = 1; row < kColumnRows; ++row) result = reducer.combine(result, slots[row][x]);
      if (args.partial != nullptr) {
        args.partial[(o * args.splits + split) * args.inner + i] = result;
      } else {
        args.output[o * args.inner + i] = to_output<Out>(reducer.finish(result, args.finish_count));
      }
    }
    __syncthreads();  // slots are reused by the next item
  }
}

template <int Group, bool FromPartial, typename In, typename Out, typename Reducer>
void launch_rows(const ReduceArgs<In, Out, Reducer>& args, cudaStream_t stream) {
  const int64_t blocks = ceil_div(args.outer * args.splits, kBlock / Group);
  reduce_rows_kernel<Group, FromPartial><<<grid_for(blocks), kBlock, 0, stream>>>(args);
}

template <bool FromPartial, typename In, typename Out, typename Reducer>
void launch_columns(const ReduceArgs<In, Out, Reducer>& args, cudaStream_t stream) {
  const int64_t blocks = args.outer * ceil_div(args.inner, kColumnWidth) * args.splits;
  reduce_columns_kernel<FromPartial><<<grid_for(blocks), kBlock, 0, stream>>>(args);
}

// Runs one reduction; `scratch` holds reduce_scratch_bytes(...) bytes when the layout splits.
template <typename T, typename Out, typename Reducer>
int run_reduce(const T* input, Out* output, void* scratch, const ReduceLayout& layout, Reducer reducer) {
  using Acc = typename Reducer::Acc;
  static_assert(sizeof(Acc) <= kScratchPerAccumulator, "scratch sizing covers every accumulator");
  if (layout.outer * layout.inner == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  const int64_t splits = split_count(layout);
  const bool rows = layout.inner == 1;
  if (splits == 1) {
    const ReduceArgs<T, Out, Reducer> args{input, output, nullptr, layout.outer, layout.reduce, layout.inner, 1,
                                           layout.reduce, reducer};
    if (!rows) {
      launch_columns<false>(args, stream);
    } else if (layout.reduce <= kShortRowLimit) {
      launch_rows<8, false>(args, stream);
    } else if (layout.reduce <= kWarpRowLimit) {
      launch_rows<32, false>(args, stream);
    } else {
      launch_rows<kBlock, false>(args, stream);
    }
    return status_of_launch();
  }
  Acc* partial = static_cast<Acc*>(scratch);
  const ReduceArgs<T, Out, Reducer> first{input, output, partial, layout.outer, layout.reduce, layout.inner, splits,
                                          layout.reduce, reducer};
  const ReduceArgs<Acc, Out, Reducer> second{partial, output, nullptr, layout.outer, splits, layout.inner, 1,
                                             layout.reduce, reducer};
  if (rows) {
    launch_rows<kBlock, false>(first, stream);
    launch_rows<kBlock, true>(second, stream);
  } else {
    launch_columns<false>(first, stream);
    launch_columns<true>(second, stream);
  }
  return status_of_launch();
}

// The family launchers behind launch_reduce (one .cu file each, so they compile in parallel).
int launch_sum_family(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                      const ReduceLayout& layout);
int launch_extremum_family(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                           const ReduceLayout& layout);
int launch_stats_family(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                        const ReduceLayout& layout, int64_t correction);

}  // namespace ember::cuda::detail
