// CUDA row selection (embedding, index_select) and one_hot. Selection is a byte copy of whole
// rows, vectorized to 16-byte words where the row and the pointers allow, so it runs at memory
// bandwidth for any dtype; see kernels/cuda/index.h for the contracts.
#include "kernels/cuda/index_device.cuh"

namespace ember::cuda {

namespace {

using device::kThreads;

// One index per row of the output: out row (o, k) takes source row (o, indices[k]). An
// out-of-range index writes a zero row and is recorded.
template <typename Word, typename Index>
__global__ void select_rows_kernel(Word* out, const Word* source, const Index* indices, int64_t outer,
                                   int64_t source_size, int64_t count, int64_t row_words, device::RowTiling tiling,
                                   IndexFlag flag) {
  // Only lane 0 of a row's first column block reports a bad index: each report reads the error
  // record across PCIe, and a tensor of bad indices would otherwise do so from every thread.
  const bool reporter = (threadIdx.x & ((1u << tiling.log2_lanes) - 1)) == 0 && blockIdx.y == 0;
  device::copy_rows<Word>(outer * count, row_words, tiling, [&](int64_t row, Word*& to, const Word*& from) {
    // outer is 1 for embedding and dim-0 selections: skip the division there.
    const int64_t o = outer == 1 ? 0 : device::outer_of(row, count, outer * count);
    const int64_t k = row - o * count;
    const int64_t value = static_cast<int64_t>(indices[k]);
    const bool in_range = value >= 0 && value < source_size;
    if (!in_range && reporter) device::report_error(flag, value, source_size, k);
    to = out + row * row_words;
    from = in_range ? source + (o * source_size + value) * row_words : nullptr;
  });
}

template <typename Index>
__global__ void check_indices_kernel(const Index* indices, int64_t count, int64_t limit, IndexFlag flag) {
  const int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t k = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; k < count; k += step)
    device::index_in_range(static_cast<int64_t>(indices[k]), limit, k, flag);
}

unsigned blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < device::kMaxGrid ? blocks : device::kMaxGrid);
}

__global__ void one_hot_kernel(int64_t* out, const int64_t* indices, int64_t count, int64_t classes,
                               IndexFlag flag) {
  const int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t k = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; k < count; k += step) {
    const int64_t value = indices[k];
    if (device::index_in_range(value, classes, k, flag)) out[k * classes + value] = 1;
  }
}

}  // namespace

int launch_check_indices(const void* indices, bool indices_int64, int64_t count, int64_t limit, IndexFlag flag,
                         void* stream) {
  if (count == 0 || flag.record == nullptr) return 0;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  if (indices_int64) {
    check_indices_kernel<<<blocks_for(count), kThreads, 0, cuda_stream>>>(static_cast<const int64_t*>(indices), count,
                                                                          limit, flag);
  } else {
    check_indices_kernel<<<blocks_for(count), kThreads, 0, cuda_stream>>>(static_cast<const int32_t*>(indices), count,
                                                                          limit, flag);
  }
  return device::check_launch();
}

int launch_select_rows(const SelectRows& select, IndexFlag flag, void* stream) {
  const int64_t rows = select.outer * select.count;
  if (rows == 0 || select.row_bytes == 0)
    return launch_check_indices(select.indices, select.indices_int64, select.count, select.source_size, flag, stream);
  const int word_bytes = device::word_bytes_for({static_cast<uint64_t>(select.row_bytes),
                                                 reinterpret_cast<uint64_t>(select.out),
                                                 reinterpret_cast<uint64_t>(select.source)});
  const int64_t row_words = select.row_bytes / word_bytes;
  const device::RowTiling tiling = device::tiling_for(row_words);
  const dim3 grid(device::grid_rows(rows, tiling), device::grid_columns(row_words, tiling));
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  device::dispatch_word(word_bytes, [&](auto word) {
    using Word = decltype(word);
    if (select.indices_int64) {
      select_rows_kernel<<<grid, kThreads, 0, cuda_stream>>>(
          static_cast<Word*>(select.out), static_cast<const Word*>(select.source),
          static_cast<const int64_t*>(select.indices), select.outer, select.source_size, select.count, row_words,
          tiling, flag);
    } else {
      select_rows_kernel<<<grid, kThreads, 0, cuda_stream>>>(
          static_cast<Word*>(select.out), static_cast<const Word*>(select.source),
          static_cast<const int32_t*>(select.indices), select.outer, select.source_size, select.count, row_words,
          tiling, flag);
    }
  });
  return device::check_launch();
}

int launch_one_hot(int64_t* out, const int64_t* indices, int64_t count, int64_t classes, IndexFlag flag,
                   void* stream) {
  if (count == 0) return 0;
  one_hot_kernel<<<blocks_for(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, indices, count, classes,
                                                                                      flag);
  return device::check_launch();
}

}  // namespace ember::cuda
