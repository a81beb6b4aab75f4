// sum, mean, amax, amin, prod, any and all on the CPU. One driver walks the reduction geometry with one of three
// strategies and a reducer from kernels/reduce_functors.h:
//   rows    - the reduced elements of each output are contiguous (reduce over the last dim);
//   columns - the output's fastest dim is the input's stride-1 dim (sum over dim 0 of [N, C],
//             the bias gradient): whole rows are accumulated into a block of accumulators;
//   general - any strides, one output element at a time.
// Every output element is combined in an order fixed by the shape alone, so results never depend
// on the thread count. float32 and 16-bit inputs accumulate in double.
#include <algorithm>
#include <vector>

#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/reduce_geometry.h"
#include "kernels/cpu/reduce_kernels.h"
#include "kernels/reduce_functors.h"
#include "runtime/parallel.h"

namespace ember::cpu {

namespace {

constexpr int kLanes = 8;               // independent accumulators: vectorizes, fixed tree merge
constexpr int64_t kChunk = 1 << 16;     // long rows combine fixed-size chunks in order
constexpr int64_t kColumnBlock = 1024;  // accumulators per column block (8 KiB of doubles, in L1)

template <typename Acc, typename T>
inline Acc load_as(const T* pointer) {
  return static_cast<Acc>(static_cast<compute_t<T>>(*pointer));
}

template <typename Acc, typename T, typename Reduce>
Acc reduce_row(const T* data, int64_t count, const Reduce& reduce) {
  Acc lanes[kLanes];
  for (Acc& lane : lanes) lane = reduce.identity();
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = reduce.combine(lanes[j], load_as<Acc>(data + i + j));
  Acc tail = reduce.identity();
  for (; i < count; ++i) tail = reduce.combine(tail, load_as<Acc>(data + i));
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) lanes[j] = reduce.combine(lanes[j], lanes[j + width]);
  return reduce.combine(lanes[0], tail);
}

// A contiguous row of any length; chunks run in parallel only when asked (a single output).
template <typename Acc, typename T, typename Reduce>
Acc reduce_contiguous(const T* data, int64_t count, const Reduce& reduce, bool parallel_chunks) {
  if (count <= kChunk) return reduce_row<Acc>(data, count, reduce);
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  auto chunk_result = [&](int64_t chunk) {
    return reduce_row<Acc>(data + chunk * kChunk, std::min(kChunk, count - chunk * kChunk), reduce);
  };
  Acc result = reduce.identity();
  if (!parallel_chunks) {
    for (int64_t chunk = 0; chunk < chunks; ++chunk) result = reduce.combine(result, chunk_result(chunk));
    return result;
  }
  std::vector<Acc> partials(chunks);
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) partials[chunk] = chunk_result(chunk);
  for (const Acc& partial : partials) result = reduce.combine(result, partial);
  return result;
}

template <typename Acc, typename T, typename Reduce>
Acc reduce_general(const T* data, const ReduceGeometry<1>& geometry, int64_t offset, const Reduce& reduce) {
  Acc result = reduce.identity();
  for_each_inner_run<1>(geometry, {offset}, [&](std::array<int64_t, 1> at, int64_t count, std::array<int64_t, 1> step) {
    const T* run = data + at[0];
    if (step[0] == 1) {
      result = reduce.combine(result, reduce_contiguous<Acc>(run, count, reduce, false));
    } else {
      for (int64_t i = 0; i < count; ++i) result = reduce.combine(result, load_as<Acc>(run + i * step[0]));
    }
  });
  return result;
}

template <typename Out, typename Acc, typename T, typename Reduce>
void reduce_columns(Out* out, const T* data, const ReduceGeometry<1>& geometry, const Reduce& reduce,
                    bool parallel) {
  const int64_t columns = geometry.outer_sizes.back();
  const int64_t prefixes = geometry.num_outputs / columns;
  // Each column is summed row by row whatever the block width, so narrower blocks that give
  // every thread work do not change the results.
  int64_t block = kColumnBlock;
  if (parallel && prefixes < get_num_threads())
    block = std::clamp<int64_t>((columns / get_num_threads() + 15) / 16 * 16, 16, kColumnBlock);
  const int64_t blocks = (columns + block - 1) / block;
  auto block_body = [&](int64_t item) {
    const int64_t prefix = item / blocks;
    const int64_t first = (item % blocks) * block;
    const int64_t width = std::min(block, columns - first);
    Acc accumulators[kColumnBlock];
    for (int64_t j = 0; j < width; ++j) accumulators[j] = reduce.identity();
    const int64_t base = geometry.outer_offsets(prefix * columns)[0] + first;
    for_each_inner_run<1>(geometry, {base}, [&](std::array<int64_t, 1> at, int64_t count, std::array<int64_t, 1> step) {
      for (int64_t r = 0; r < count; ++r) {
        const T* row = data + at[0] + r * step[0];
        for (int64_t j = 0; j < width; ++j) accumulators[j] = reduce.combine(accumulators[j], load_as<Acc>(row + j));
      }
    });
    Out* destination = out + prefix * columns + first;
    for (int64_t j = 0; j < width; ++j)
      destination[j] = static_cast<Out>(reduce.finish(accumulators[j], geometry.reduce_count));
  };
  parallel_for(prefixes * blocks, parallel, [&](int64_t item) { block_body(item); });
}

template <typename Out, typename Acc, typename T, typename Reduce>
void reduce_typed(const Tensor& output, const Tensor& input, uint32_t mask, const Reduce& reduce) {
  Out* out = output.data_ptr<Out>();
  const T* data = input.data_ptr<T>();
  const ReduceGeometry<1> geometry = make_reduce_geometry<1>(input.sizes(), {input.strides()}, mask);
  const int64_t outputs = geometry.num_outputs;
  if (outputs == 0) return;
  if (geometry.reduce_count == 0) {  // sum of nothing is 0, mean NaN, prod 1, any false, all true
    const Out empty = static_cast<Out>(reduce.finish(reduce.identity(), 0));
    for (int64_t o = 0; o < outputs; ++o) out[o] = empty;
    return;
  }
  const bool parallel = outputs * geometry.reduce_count >= kParallelGrain && get_num_threads() > 1;
  const int inner_rank = geometry.inner_sizes.size();
  const int outer_rank = geometry.outer_sizes.size();
  if (inner_rank == 1 && geometry.inner_strides[0][0] == 1) {
    const int64_t count = geometry.reduce_count;
    if (outputs == 1) {
      out[0] = static_cast<Out>(reduce.finish(reduce_contiguous<Acc>(data, count, reduce, parallel), count));
      return;
    }
    parallel_for(outputs, parallel, [&](int64_t o) {
      const T* row = data + geometry.outer_offsets(o)[0];
      out[o] = static_cast<Out>(reduce.finish(reduce_contiguous<Acc>(row, count, reduce, false), count));
    });
    return;
  }
  if (outer_rank > 0 && geometry.outer_strides[0][outer_rank - 1] == 1) {
    reduce_columns<Out, Acc>(out, data, geometry, reduce, parallel);
    return;
  }
  parallel_for(outputs, parallel, [&](int64_t o) {
    const Acc value = reduce_general<Acc>(data, geometry, geometry.outer_offsets(o)[0], reduce);
    out[o] = static_cast<Out>(reduce.finish(value, geometry.reduce_count));
  });
}

uint32_t mask_of(const OpCall& call) {
  return reduce_mask(call.attrs.get<Dims>("dims"), call.input(0).dim(), call.op.name);
}

// Floating inputs keep their dtype and accumulate in double; integers and bool sum to int64.
template <template <typename> class Reduce>
void accumulate_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  dispatch_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      reduce_typed<T, double, T>(outputs[0], input, mask_of(call), Reduce<double>{});
    } else {
      reduce_typed<int64_t, int64_t, T>(outputs[0], input, mask_of(call), Reduce<int64_t>{});
    }
  });
}

// amax / amin compare in the compute type (exact: no rounding happens).
template <template <typename> class Reduce>
void extremum_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  dispatch_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    reduce_typed<T, compute_t<T>, T>(outputs[0], input, mask_of(call), Reduce<compute_t<T>>{});
  });
}

// any / all: every input dtype is read as bool (nonzero) and the result is bool.
template <template <typename> class Reduce>
void logical_reduce_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  dispatch_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    reduce_typed<bool, bool, T>(outputs[0], input, mask_of(call), Reduce<bool>{});
  });
}

}  // namespace

void sum_kernel(const OpCall& call, TensorList& outputs) { accumulate_kernel<fn::SumReduce>(call, outputs); }
void mean_kernel(const OpCall& call, TensorList& outputs) { accumulate_kernel<fn::MeanReduce>(call, outputs); }
void amax_kernel(const OpCall& call, TensorList& outputs) { extremum_kernel<fn::MaxReduce>(call, outputs); }
void amin_kernel(const OpCall& call, TensorList& outputs) { extremum_kernel<fn::MinReduce>(call, outputs); }
void prod_kernel(const OpCall& call, TensorList& outputs) { accumulate_kernel<fn::ProdReduce>(call, outputs); }
void any_kernel(const OpCall& call, TensorList& outputs) { logical_reduce_kernel<fn::AnyReduce>(call, outputs); }
void all_kernel(const OpCall& call, TensorList& outputs) { logical_reduce_kernel<fn::AllReduce>(call, outputs); }

}  // namespace ember::cpu
