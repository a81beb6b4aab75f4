// CUDA gather and scatter_add: a grid-stride walk over every position of the (strided) int64
// index tensor. gather is a byte copy per element; scatter_add accumulates with atomicAdd, so the
// order of the additions to one element, and with it the last bits of a float sum, may vary from
// run to run (16-bit sources accumulate in fp32 scratch, which the op file rounds once at the end).
#include "kernels/cuda/index_device.cuh"

namespace ember::cuda {

namespace {

using device::kThreads;

struct WalkOffsets {
  int64_t index = 0;
  int64_t indexed = 0;  // without the dim coordinate
  int64_t plain = 0;
};

// Offsets of the position with row-major number `linear` in the walk's shape. Position is
// uint32_t when the walk has fewer than 2^32 positions: 32-bit division is several times cheaper
// than 64-bit on the GPU, and this chain runs per element (offsets themselves stay 64-bit).
template <typename Position>
__device__ __forceinline__ WalkOffsets offsets_of(const IndexedWalk& walk, Position linear) {
  WalkOffsets offsets;
  for (int d = walk.dims - 1; d >= 0; --d) {
    const Position size = static_cast<Position>(walk.sizes[d]);
    const int64_t coordinate = static_cast<int64_t>(linear % size);
    linear /= size;
    offsets.index += coordinate * walk.index_strides[d];
    offsets.indexed += coordinate * walk.indexed_strides[d];
    offsets.plain += coordinate * walk.plain_strides[d];
  }
  return offsets;
}

// Out-of-range indices produce a zero element (and are recorded).
template <typename Position, typename Element>
__global__ void gather_kernel(Element* out, const Element* indexed, IndexedWalk walk, IndexFlag flag) {
  const int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < walk.numel; i += step) {
    const WalkOffsets offsets = offsets_of(walk, static_cast<Position>(i));
    const int64_t value = walk.index[offsets.index];
    out[i] = device::index_in_range(value, walk.limit, i, flag)
                 ? indexed[offsets.indexed + value * walk.indexed_dim_stride]
                 : Element{};
  }
}

// Out-of-range indices drop their contribution (and are recorded).
template <typename Position, typename Source>
__global__ void scatter_add_kernel(device::accumulate_t<Source>* accumulator, const Source* plain, IndexedWalk walk,
                                   IndexFlag flag) {
  using Accumulator = device::accumulate_t<Source>;
  const int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < walk.numel; i += step) {
    const WalkOffsets offsets = offsets_of(walk, static_cast<Position>(i));
    const int64_t value = walk.index[offsets.index];
    if (!device::index_in_range(value, walk.limit, i, flag)) continue;
    device::atomic_add(accumulator + offsets.indexed + value * walk.indexed_dim_stride,
                       static_cast<Accumulator>(plain[offsets.plain]));
  }
}

unsigned blocks_for(int64_t numel) {
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < device::kMaxGrid ? blocks : device::kMaxGrid);
}

bool fits_32_bits(int64_t numel) { return numel <= int64_t{0xffffffff}; }

template <typename Source>
void launch_scatter_typed(void* accumulator, const void* plain, const IndexedWalk& walk, IndexFlag flag,
                          cudaStream_t stream) {
  auto* typed_accumulator = static_cast<device::accumulate_t<Source>*>(accumulator);
  const auto* typed_plain = static_cast<const Source*>(plain);
  if (fits_32_bits(walk.numel)) {
    scatter_add_kernel<uint32_t, Source><<<blocks_for(walk.numel), kThreads, 0, stream>>>(typed_accumulator,
                                                                                        typed_plain, walk, flag);
  } else {
    scatter_add_kernel<uint64_t, Source><<<blocks_for(walk.numel), kThreads, 0, stream>>>(typed_accumulator,
                                                                                        typed_plain, walk, flag);
  }
}

}  // namespace

int launch_gather(void* out, const void* indexed, int element_bytes, const IndexedWalk& walk, IndexFlag flag,
                  void* stream) {
  if (walk.numel == 0) return 0;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  // Elements are copied as raw words of their size: one kernel per width, not per dtype.
  device::dispatch_word(element_bytes, [&](auto word) {
    using Word = decltype(word);
    if (fits_32_bits(walk.numel)) {
      gather_kernel<uint32_t><<<blocks_for(walk.numel), kThreads, 0, cuda_stream>>>(
          static_cast<Word*>(out), static_cast<const Word*>(indexed), walk, flag);
    } else {
      gather_kernel<uint64_t><<<blocks_for(walk.numel), kThreads, 0, cuda_stream>>>(
          static_cast<Word*>(out), static_cast<const Word*>(indexed), walk, flag);
    }
  });
  return device::check_launch();
}

int launch_scatter_add(void* accumulator, DType accumulator_dtype, const void* plain, DType source_dtype,
                       const IndexedWalk& walk, IndexFlag flag, void* stream) {
  if (walk.numel == 0) return 0;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  const bool half_source = source_dtype == DType{2} || source_dtype == DType{3};
  if (accumulator_dtype != (half_source ? DType{0} : source_dtype)) return static_cast<int>(cudaErrorInvalidValue);
  switch (static_cast<int>(source_dtype)) {  // the order of enum class DType
    case 0: launch_scatter_typed<float>(accumulator, plain, walk, flag, cuda_stream); break;
    case 1: launch_scatter_typed<double>(accumulator, plain, walk, flag, cuda_stream); break;
    case 2: launch_scatter_typed<BFloat16>(accumulator, plain, walk, flag, cuda_stream); break;
    case 3: launch_scatter_typed<Float16>(accumulator, plain, walk, flag, cuda_stream); break;
    case 4: launch_scatter_typed<int32_t>(accumulator, plain, walk, flag, cuda_stream); break;
    case 5: launch_scatter_typed<int64_t>(accumulator, plain, walk, flag, cuda_stream); break;
    default: return static_cast<int>(cudaErrorInvalidValue);  // bool: the op file refuses it first
  }
  return device::check_launch();
}

}  // namespace ember::cuda
