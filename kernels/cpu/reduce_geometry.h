// Geometry of a CPU reduction: which dims are reduced (checked once for the shape rule and the
// kernel), the kept dims walked per output element and the reduced dims walked per element of
// one output, with adjacent dims merged where every operand's memory allows.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "kernels/cpu/parallel_for.h"
#include "runtime/dims.h"
#include "runtime/parallel.h"

namespace ember::cpu {

// Bit i set when dim i of a rank-`rank` tensor is reduced; empty `dims` reduces every dim.
// Negative dims wrap; out-of-range and repeated dims throw naming `op`.
uint32_t reduce_mask(const Dims& dims, int rank, std::string_view op);

// The output shape of reducing `sizes` over `mask` (reduced dims become 1 with keepdim).
Dims reduced_sizes(const Dims& sizes, uint32_t mask, bool keepdim);

// Throws "op: cannot reduce over dim d of size 0 ..." when a reduced dim is empty (amax, argmax:
// an empty set has no maximum).
void check_nonempty_reduction(const Dims& sizes, uint32_t mask, std::string_view op);

// K operands share one shape (e.g. an input and its gradient) but may have different strides.
// Output element o walks the kept dims in order (the output is contiguous over them); the
// reduced dims are walked in logical order, so argmax sees elements in row-major order.
template <int K>
struct ReduceGeometry {
  Dims outer_sizes;
  std::array<Dims, K> outer_strides;
  Dims inner_sizes;
  std::array<Dims, K> inner_strides;
  int64_t num_outputs = 1;
  int64_t reduce_count = 1;

  // Element offsets of output element `output` in each operand.
  std::array<int64_t, K> outer_offsets(int64_t output) const {
    std::array<int64_t, K> offsets{};
    for (int d = outer_sizes.size() - 1; d >= 0; --d) {
      const int64_t index = output % outer_sizes[d];
      output /= outer_sizes[d];
      for (int k = 0; k < K; ++k) offsets[k] += index * outer_strides[k][d];
    }
    return offsets;
  }
};

namespace detail {
// Appends one dim to a group, merging it into the previous dim when every operand allows.
template <int K>
void append_dim(Dims& sizes, std::array<Dims, K>& strides, int64_t size, const std::array<int64_t, K>& dim_strides) {
  if (size == 1) return;  // size-1 dims never move a pointer
  bool mergeable = sizes.size() > 0 && size != 0 && sizes[sizes.size() - 1] != 0;
  for (int k = 0; k < K && mergeable; ++k) mergeable = strides[k].back() == dim_strides[k] * size;
  if (mergeable) {
    sizes[sizes.size() - 1] *= size;
    for (int k = 0; k < K; ++k) strides[k][strides[k].size() - 1] = dim_strides[k];
    return;
  }
  sizes.push_back(size);
  for (int k = 0; k < K; ++k) strides[k].push_back(dim_strides[k]);
}
}  // namespace detail

template <int K>
ReduceGeometry<K> make_reduce_geometry(const Dims& sizes, const std::array<Dims, K>& strides, uint32_t mask) {
  ReduceGeometry<K> geometry;
  for (int d = 0; d < sizes.size(); ++d) {
    std::array<int64_t, K> dim_strides;
    for (int k = 0; k < K; ++k) dim_strides[k] = strides[k][d];
    if (mask & (1u << d)) {
      detail::append_dim<K>(geometry.inner_sizes, geometry.inner_strides, sizes[d], dim_strides);
      geometry.reduce_count *= sizes[d];
    } else {
      detail::append_dim<K>(geometry.outer_sizes, geometry.outer_strides, sizes[d], dim_strides);
      geometry.num_outputs *= sizes[d];
    }
  }
  return geometry;
}

// Calls body(offsets, count, steps) for each 1-D run of the reduced dims of one output element,
// in logical order: offsets are the run's first element in each operand, steps its strides.
template <int K, typename Body>
void for_each_inner_run(const ReduceGeometry<K>& geometry, std::array<int64_t, K> base, Body&& body) {
  if (geometry.reduce_count == 0) return;
  const int rank = geometry.inner_sizes.size();
  if (rank == 0) {
    body(base, int64_t{1}, std::array<int64_t, K>{});
    return;
  }
  const int64_t count = geometry.inner_sizes[rank - 1];
  std::array<int64_t, K> steps;
  for (int k = 0; k < K; ++k) steps[k] = geometry.inner_strides[k][rank - 1];
  std::array<int64_t, Dims::kMaxRank> index{};
  const int64_t runs = geometry.reduce_count / count;
  for (int64_t run = 0; run < runs; ++run) {
    body(base, count, steps);
    // Odometer over the outer reduced dims: advance the last one, carrying into earlier ones.
    for (int d = rank - 2; d >= 0; --d) {
      for (int k = 0; k < K; ++k) base[k] += geometry.inner_strides[k][d];
      if (++index[d] < geometry.inner_sizes[d]) break;
      for (int k = 0; k < K; ++k) base[k] -= geometry.inner_strides[k][d] * geometry.inner_sizes[d];
      index[d] = 0;
    }
  }
}

// Calls slice(offsets, length, steps) for every 1-D slice along `dim` of K operands of shape
// `sizes` (softmax rows, for example). Each slice is handled whole by one thread, so results do
// not depend on the thread count.
template <int K, typename Slice>
void for_each_slice(const Dims& sizes, const std::array<Dims, K>& strides, int dim, Slice&& slice) {
  const uint32_t mask = sizes.size() == 0 ? 0u : 1u << dim;
  const ReduceGeometry<K> geometry = make_reduce_geometry<K>(sizes, strides, mask);
  const int64_t length = geometry.reduce_count;
  std::array<int64_t, K> steps{};
  if (geometry.inner_sizes.size() == 1)
    for (int k = 0; k < K; ++k) steps[k] = geometry.inner_strides[k][0];
  const bool parallel = geometry.num_outputs > 1 && geometry.num_outputs * length >= kParallelGrain &&
                        get_num_threads() > 1;
  parallel_for(geometry.num_outputs, parallel,
               [&](int64_t row) { slice(geometry.outer_offsets(row), length, steps); });
}

}  // namespace ember::cpu
