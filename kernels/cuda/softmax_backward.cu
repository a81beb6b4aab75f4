// CUDA softmax_backward and log_softmax_backward from the forward output y and upstream grad g:
//   softmax:     grad_input = y * (g - sum(g * y));   log_softmax: grad_input = g - exp(y) * sum(g).
// Same kernel shapes as softmax.cu: a warp per row up to 1024 (g and y in registers), a block per
// longer row, a thread per column when the dim is not the innermost.
#include "kernels/cuda/reduce_common.cuh"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/softmax_math.cuh"

namespace ember::cuda {

namespace detail {

namespace {

// The row's summand: g for log_softmax, g * y for softmax. Summed in accumulate_t (double for
// float32, like the CPU): g - sum cancels, so the sum's rounding would show in the result.
template <bool Log, typename C, typename Acc = accumulate_t<C>>
__device__ __forceinline__ Acc summand(C grad, C y) {
  return Log ? static_cast<Acc>(grad) : static_cast<Acc>(grad) * static_cast<Acc>(y);
}

template <bool Log, typename C, typename Acc> __device__ __forceinline__ C gradient(C grad, C y, Acc sum) {
  const C total = static_cast<C>(sum);
  if constexpr (Log) {
    return grad - exp_of(y) * total;
  } else {
    return y * (grad - total);
  }
}

template <int PerLane, bool Log, typename T>
__global__ void __launch_bounds__(kRowBlock) backward_warp_rows(const T* grad, const T* output, T* grad_input,
                                                               int64_t rows, int64_t length) {
  using C = compute_t<T>;
  const int lane = threadIdx.x % 32;
  for (int64_t row = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32; row < rows;
       row += int64_t{gridDim.x} * kWarpsPerBlock) {
    const int64_t base = row * length;
    C grads[PerLane];
    C ys[PerLane];
    accumulate_t<C> total = 0;
#pragma unroll
    for (int k = 0; k < PerLane; ++k) {
      const int64_t r = lane + 32 * k;
      grads[k] = r < length ? load(grad, base + r) : C(0);
      ys[k] = r < length ? load(output, base + r) : C(0);
      total += summand<Log>(grads[k], ys[k]);
    }
    total = warp_all_reduce(total, AddOp{});
#pragma unroll
    for (int k = 0; k < PerLane; ++k) {
      const int64_t r = lane + 32 * k;
      if (r < length) grad_input[base + r] = to_output<T>(gradient<Log>(grads[k], ys[k], total));
    }
  }
}

template <bool Log, typename T>
__global__ void __launch_bounds__(kRowBlock) backward_block_rows(const T* grad, const T* output, T* grad_input,
                                                                int64_t rows, int64_t length) {
  using C = compute_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * length;
    accumulate_t<C> total = 0;
    for (int64_t r = threadIdx.x; r < length; r += kRowBlock) total += summand<Log>(load(grad, base + r), load(output, base + r));
    total = block_all_reduce<kRowBlock>(total, AddOp{});
    for (int64_t r = threadIdx.x; r < length; r += kRowBlock)
      grad_input[base + r] = to_output<T>(gradient<Log>(load(grad, base + r), load(output, base + r), total));
  }
}

template <bool Log, typename T>
__global__ void backward_columns(const T* grad, const T* output, T* grad_input, ReduceLayout layout) {
  using C = compute_t<T>;
  const int64_t columns = layout.outer * layout.inner;
  const int64_t step = layout.inner;
  for (int64_t column = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; column < columns;
       column += int64_t{blockDim.x} * gridDim.x) {
    const int64_t base = (column / layout.inner) * layout.reduce * layout.inner + column % layout.inner;
    accumulate_t<C> total = 0;
    for (int64_t r = 0; r < layout.reduce; ++r) total += summand<Log>(load(grad, base + r * step), load(output, base + r * step));
    for (int64_t r = 0; r < layout.reduce; ++r) {
      const int64_t at = base + r * step;
      grad_input[at] = to_output<T>(gradient<Log>(load(grad, at), load(output, at), total));
    }
  }
}

template <bool Log, typename T>
void launch_typed(const T* grad, const T* output, T* grad_input, const ReduceLayout& layout) {
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  const int64_t length = layout.reduce;
  if (layout.inner > 1) {
    const int64_t blocks = (layout.outer * layout.inner + kRowBlock - 1) / kRowBlock;
    backward_columns<Log><<<grid_for(blocks, 65536), kRowBlock, 0, stream>>>(grad, output, grad_input, layout);
    return;
  }
  const int64_t warp_blocks = (layout.outer + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (length <= kShortRow) {
    backward_warp_rows<4, Log><<<grid_for(warp_blocks, 65536), kRowBlock, 0, stream>>>(grad, output, grad_input,
                                                                                       layout.outer, length);
  } else if (length <= kWarpRow) {
    backward_warp_rows<32, Log><<<grid_for(warp_blocks, 65536), kRowBlock, 0, stream>>>(grad, output, grad_input,
                                                                                        layout.outer, length);
  } else {
    backward_block_rows<Log><<<grid_for(layout.outer, 65536), kRowBlock, 0, stream>>>(grad, output, grad_input,
                                                                                      layout.outer, length);
  }
}

}  // namespace

}  // namespace detail

int launch_softmax_backward(bool log, DType dtype, const void* grad, const void* output, void* grad_input,
                            const ReduceLayout& layout) {
  if (layout.outer * layout.reduce * layout.inner == 0) return 0;
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* typed_grad = static_cast<const T*>(grad);
    const T* typed_output = static_cast<const T*>(output);
    T* typed_grad_input = static_cast<T*>(grad_input);
    if (log) {
      detail::launch_typed<true>(typed_grad, typed_output, typed_grad_input, layout);
    } else {
      detail::launch_typed<false>(typed_grad, typed_output, typed_grad_input, layout);
    }
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
