// CUDA slice accumulation for embedding_backward and index_add: accumulator[o, indices[k], i] +=
// source[o, k, i], one thread per source element with atomicAdd. Threads of a block walk `inner`
// (the contiguous dim) so loads and atomics coalesce; the order of additions into one element is
// not fixed, so float sums may differ in the last bits between runs.
#include "kernels/cuda/index_device.cuh"

namespace ember::cuda {

namespace {

using device::kThreads;

// Rows (o, k) over blockIdx.x and the lanes' row slot, elements of a row over blockIdx.y and lane,
// with the row tiling of copy_rows (no per-element division).
template <typename Source, typename Index>
__global__ void add_slices_kernel(device::accumulate_t<Source>* accumulator, const Source* source,
                                  const Index* indices, int64_t outer, int64_t target_size, int64_t count,
                                  int64_t inner, device::RowTiling tiling, IndexFlag flag) {
  using Accumulator = device::accumulate_t<Source>;
  const int lanes = 1 << tiling.log2_lanes;
  const int lane = static_cast<int>(threadIdx.x) & (lanes - 1);
  const int64_t rows_per_block = blockDim.x >> tiling.log2_lanes;
  const int64_t rows = outer * count;
  const int64_t row_step = int64_t{gridDim.x} * rows_per_block;
  for (int64_t row = int64_t{blockIdx.x} * rows_per_block + (threadIdx.x >> tiling.log2_lanes); row < rows;
       row += row_step) {
    const int64_t o = outer == 1 ? 0 : device::outer_of(row, count, rows);
    const int64_t k = row - o * count;
    const int64_t value = static_cast<int64_t>(indices[k]);
    // Only lane 0 of the row's first column block records, to keep errors from contending.
    if (value < 0 || value >= target_size) {
      if (lane == 0 && blockIdx.y == 0) device::report_error(flag, value, target_size, k);
      continue;
    }
    Accumulator* to = accumulator + (o * target_size + value) * inner;
    const Source* from = source + row * inner;
    for (int64_t i = int64_t{blockIdx.y} * lanes + lane; i < inner; i += int64_t{gridDim.y} * lanes)
      device::atomic_add(to + i, static_cast<Accumulator>(from[i]));
  }
}

template <typename Source>
void launch_typed(const AddSlices& add, IndexFlag flag, cudaStream_t stream) {
  const device::RowTiling tiling = device::tiling_for(add.inner);
  const dim3 grid(device::grid_rows(add.outer * add.count, tiling), device::grid_columns(add.inner, tiling));
  auto* accumulator = static_cast<device::accumulate_t<Source>*>(add.accumulator);
  const auto* source = static_cast<const Source*>(add.source);
  if (add.indices_int64) {
    add_slices_kernel<<<grid, kThreads, 0, stream>>>(accumulator, source, static_cast<const int64_t*>(add.indices),
                                                     add.outer, add.target_size, add.count, add.inner, tiling, flag);
  } else {
    add_slices_kernel<<<grid, kThreads, 0, stream>>>(accumulator, source, static_cast<const int32_t*>(add.indices),
                                                     add.outer, add.target_size, add.count, add.inner, tiling, flag);
  }
}

}  // namespace

int launch_add_slices(const AddSlices& add, IndexFlag flag, void* stream) {
  if (add.outer * add.count * add.inner == 0)
    return launch_check_indices(add.indices, add.indices_int64, add.count, add.target_size, flag, stream);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  const bool half_source = add.source_dtype == DType{2} || add.source_dtype == DType{3};
  if (add.accumulator_dtype != (half_source ? DType{0} : add.source_dtype))
    return static_cast<int>(cudaErrorInvalidValue);
  switch (static_cast<int>(add.source_dtype)) {  // the order of enum class DType
    case 0: launch_typed<float>(add, flag, cuda_stream); break;
    case 1: launch_typed<double>(add, flag, cuda_stream); break;
    case 2: launch_typed<BFloat16>(add, flag, cuda_stream); break;
    case 3: launch_typed<Float16>(add, flag, cuda_stream); break;
    case 4: launch_typed<int32_t>(add, flag, cuda_stream); break;
    case 5: launch_typed<int64_t>(add, flag, cuda_stream); break;
    default: return static_cast<int>(cudaErrorInvalidValue);  // bool: the op file refuses it first
  }
  return device::check_launch();
}

}  // namespace ember::cuda
