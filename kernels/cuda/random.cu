// CUDA kernels of the index-driven factories (arange, linspace), the Philox draws (rand, randn,
// randint) and dropout. Each element reads exactly the stream words the CPU kernel reads
// (kernels/cpu/copy_kernels.cpp, kernels/cpu/dropout_kernels.cpp) and runs the same expression,
// so masks, rand and randint are bit-identical to the CPU. randn evaluates log and cos in double
// with CUDA's libdevice (<= 1-2 ulp, glibc's are < 1 ulp), so float64 results may differ from the
// CPU in the last bits and float32 results very rarely by one ulp.
#include "kernels/cuda/random.h"

#include <cmath>

#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/dropout.h"
#include "kernels/functors.h"
#include "kernels/philox.h"

namespace ember::cuda {

namespace {

using detail::compute_t;
using detail::kThreads;

template <typename T, typename Generator>
__global__ void __launch_bounds__(kThreads) generate_kernel(T* out, int64_t numel, Generator generator) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < numel; i += stride)
    out[i] = static_cast<T>(generator(i));
}

template <typename T, typename Generator>
int generate(void* out, const LaunchShape& shape, const Generator& generator) {
  if (shape.numel == 0) return 0;
  generate_kernel<T><<<detail::blocks_for(shape.numel), kThreads, 0, static_cast<cudaStream_t>(shape.stream)>>>(
      static_cast<T*>(out), shape.numel, generator);
  return static_cast<int>(cudaGetLastError());
}

// The explicit roundings keep nvcc from fusing `start + i * step` into one FMA, which would round
// differently from the CPU's separate multiply and add. Integer dtypes count in int64, as the CPU.
template <typename T> struct ArangeAt {
  double start, step;
  __device__ compute_t<T> operator()(int64_t i) const {
    if constexpr (fn::detail::wraps<T>) {
      return fn::detail::arange_integer<T>(start, step, i);
    } else {
      return fn::detail::convert<compute_t<T>>(__dadd_rn(start, __dmul_rn(static_cast<double>(i), step)));
    }
  }
};

template <typename T> struct LinspaceAt {
  double start, end, step;
  int64_t steps, halfway;
  __device__ compute_t<T> operator()(int64_t i) const {
    const double value = i < halfway ? __dadd_rn(start, __dmul_rn(step, static_cast<double>(i)))
                                     : __dsub_rn(end, __dmul_rn(step, static_cast<double>(steps - 1 - i)));
    return fn::detail::convert<compute_t<T>>(value);
  }
};

__device__ __forceinline__ uint32_t lane_of(const PhiloxBlock& block, uint64_t lane) {
  return lane == 0 ? block.values[0] : lane == 1 ? block.values[1] : lane == 2 ? block.values[2] : block.values[3];
}

// Element i of a random tensor draws from words 2i and 2i + 1 of stream (seed, offset), like the
// CPU kernels; each Draw maps those two words to the element's value in compute_t<T>.
template <typename T> struct UniformDraw {
  __device__ auto operator()(uint32_t first, uint32_t second) const {
    if constexpr (std::is_same_v<T, double>) {
      return uniform_double_from_words(first, second);
    } else {
      constexpr int significand_bits = std::is_same_v<T, BFloat16> ? 8 : std::is_same_v<T, Float16> ? 11 : 24;
      return uniform_from_word_bits(first, significand_bits);
    }
  }
};

template <typename T> struct NormalDraw {
  __device__ compute_t<T> operator()(uint32_t first, uint32_t second) const {
    const double u1 = 1.0 - static_cast<double>(first) / 4294967296.0;  // (0, 1]: log stays finite
    const double u2 = static_cast<double>(second) / 4294967296.0;
    return static_cast<compute_t<T>>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
  }
};

template <typename T> struct IntegerDraw {
  int64_t low;
  uint64_t range;
  __device__ compute_t<T> operator()(uint32_t first, uint32_t second) const {
    return static_cast<compute_t<T>>(randint_from_words(low, range, first, second));
  }
};

// offset % 4 == 0 (every offset the generator hands out): Philox block j holds the words of
// elements 2j and 2j + 1, so one thread computes the block once and writes both.
template <typename T, typename Draw>
__global__ void __launch_bounds__(kThreads)
    draw_pairs_kernel(T* out, int64_t numel, uint64_t seed, uint64_t offset, Draw draw) {
  const int64_t pairs = (numel + 1) / 2;
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t pair = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; pair < pairs; pair += stride) {
    const PhiloxBlock block = philox4x32(seed, (offset >> 2) + static_cast<uint64_t>(pair), 0);
    out[2 * pair] = static_cast<T>(draw(block.values[0], block.values[1]));
    if (2 * pair + 1 < numel) out[2 * pair + 1] = static_cast<T>(draw(block.values[2], block.values[3]));
  }
}

// Any offset: element i finds its two words itself (they may straddle two blocks).
template <typename T, typename Draw>
__global__ void __launch_bounds__(kThreads)
    draw_kernel(T* out, int64_t numel, uint64_t seed, uint64_t offset, Draw draw) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < numel; i += stride) {
    const uint64_t position = offset + 2 * static_cast<uint64_t>(i);
    const PhiloxBlock block = philox4x32(seed, position >> 2, 0);
    const uint64_t lane = position & 3;
    const uint32_t second = lane < 3 ? lane_of(block, lane + 1) : philox_word(seed, offset, 2 * static_cast<uint64_t>(i) + 1);
    out[i] = static_cast<T>(draw(lane_of(block, lane), second));
  }
}

template <typename T, typename Draw>
int draw(void* out, uint64_t seed, uint64_t offset, const LaunchShape& shape, const Draw& draw_one) {
  if (shape.numel == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(shape.stream);
  T* typed = static_cast<T*>(out);
  if ((offset & 3) == 0) {
    draw_pairs_kernel<T><<<detail::blocks_for((shape.numel + 1) / 2), kThreads, 0, stream>>>(typed, shape.numel, seed,
                                                                                            offset, draw_one);
  } else {
    draw_kernel<T><<<detail::blocks_for(shape.numel), kThreads, 0, stream>>>(typed, shape.numel, seed, offset, draw_one);
  }
  return static_cast<int>(cudaGetLastError());
}

// Element offset of linear index `linear` in an operand with `strides` over `shape`.
__device__ __forceinline__ int64_t strided_offset(int64_t linear, const LaunchShape& shape,
                                                  const StridedOperand& operand) {
  if (operand.contiguous) return linear;
  int64_t offset = 0;
  for (int dim = shape.dims - 1; dim >= 0; --dim) {
    const int64_t size = shape.sizes[dim];
    offset += (linear % size) * operand.strides[dim];
    linear /= size;
  }
  return offset;
}

// One thread per Philox block: block g of the stream holds the words of elements 4g - lead ..
// 4g - lead + 3, where lead = offset mod 4 is how many words of the first block precede
// element 0. Packed: lead == 0 and dense, aligned tensors, so a whole block is one vector access.
// __grid_constant__: strided_offset reads the parameters in place instead of from a per-thread
// local copy.
template <typename T, bool kPacked>
__global__ void __launch_bounds__(kThreads)
    dropout_kernel(T* out, bool* mask, const __grid_constant__ StridedOperand input,
                   const __grid_constant__ LaunchShape shape, double p, double scale,
                   uint64_t seed, uint64_t offset) {
  const int64_t numel = shape.numel;
  const int64_t lead = static_cast<int64_t>(offset & 3);
  const int64_t groups = (lead + numel + 3) / 4;
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  const fn::DropoutApply apply{scale};
  const T* in = static_cast<const T*>(input.data);
  for (int64_t group = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; group < groups; group += stride) {
    const PhiloxBlock block = philox4x32(seed, (offset >> 2) + static_cast<uint64_t>(group), 0);
    const int64_t base = group * 4 - lead;
    if (kPacked && base + 3 < numel) {
      const auto values = reinterpret_cast<const detail::Packed<T, 4>*>(in)[group];
      detail::Packed<T, 4> result;
      detail::Packed<bool, 4> keeps;
#pragma unroll
      for (int lane = 0; lane < 4; ++lane) {
        keeps.values[lane] = dropout_keep_word(block.values[lane], p);
        result.values[lane] = static_cast<T>(apply(static_cast<compute_t<T>>(values.values[lane]), keeps.values[lane]));
      }
      reinterpret_cast<detail::Packed<T, 4>*>(out)[group] = result;
      reinterpret_cast<detail::Packed<bool, 4>*>(mask)[group] = keeps;
      continue;
    }
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t i = base + lane;
      if (i < 0 || i >= numel) continue;
      const bool keep = dropout_keep_word(block.values[lane], p);
      mask[i] = keep;
      out[i] = static_cast<T>(apply(static_cast<compute_t<T>>(in[strided_offset(i, shape, input)]), keep));
    }
  }
}

}  // namespace

int launch_arange(DType dtype, void* out, double start, double step, const LaunchShape& shape) {
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    return generate<T>(out, shape, ArangeAt<T>{start, step});
  });
}

int launch_linspace(DType dtype, void* out, double start, double end, int64_t steps, const LaunchShape& shape) {
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  const int64_t halfway = steps == 1 ? 1 : steps / 2;
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    return generate<T>(out, shape, LinspaceAt<T>{start, end, step, steps, halfway});
  });
}

int launch_rand(DType dtype, void* out, uint64_t seed, uint64_t offset, const LaunchShape& shape) {
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    return draw<T>(out, seed, offset, shape, UniformDraw<T>{});
  });
}

int launch_randn(DType dtype, void* out, uint64_t seed, uint64_t offset, const LaunchShape& shape) {
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    return draw<T>(out, seed, offset, shape, NormalDraw<T>{});
  });
}

int launch_randint(DType dtype, void* out, int64_t low, int64_t high, uint64_t seed, uint64_t offset,
                   const LaunchShape& shape) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    return draw<T>(out, seed, offset, shape, IntegerDraw<T>{low, range});
  });
}

int launch_dropout(DType dtype, void* out, bool* mask, const StridedOperand& input, double p, uint64_t seed,
                   uint64_t offset, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const double scale = dropout_scale(p);
  const auto stream = static_cast<cudaStream_t>(shape.stream);
  const int64_t groups = ((offset & 3) + shape.numel + 3) / 4;
  return detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    const bool packed = (offset & 3) == 0 && input.contiguous && detail::aligned(input.data, 4 * sizeof(T)) &&
                        detail::aligned(out, 4 * sizeof(T)) && detail::aligned(mask, 4);
    if (packed) {
      dropout_kernel<T, true><<<detail::blocks_for(groups), kThreads, 0, stream>>>(static_cast<T*>(out), mask, input,
                                                                                  shape, p, scale, seed, offset);
    } else {
      dropout_kernel<T, false><<<detail::blocks_for(groups), kThreads, 0, stream>>>(static_cast<T*>(out), mask, input,
                                                                                   shape, p, scale, seed, offset);
    }
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace ember::cuda
