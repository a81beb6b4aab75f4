// CUDA nll_loss (one thread per row picks -log_probs[row, target]), its backward (one thread per
// gradient element) and mse_loss: elementwise squares for reduction none, else a two-pass sum in
// a fixed order (fixed chunks per block, then one block over the chunk sums).
#include "kernels/cuda/loss_common.cuh"

namespace ember::cuda {

namespace detail {

namespace {

constexpr int64_t kMseChunk = 16 * 1024;  // elements per block of the first mse pass
constexpr int64_t kMseMaxBlocks = 1024;

template <typename T>
__global__ void nll_loss_rows(ClassLossArgs args, T* output, double* row_losses) {
  using C = compute_t<T>;
  const T* scores = static_cast<const T*>(args.scores);
  for (int64_t row = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; row < args.rows;
       row += int64_t{blockDim.x} * gridDim.x) {
    const int64_t target = target_of(args, row);
    C loss = 0;
    if (target == -2) {
      loss = std::numeric_limits<C>::quiet_NaN();
    } else if (target >= 0) {
      loss = -load(scores, row * args.row_stride + target * args.class_stride);
    }
    if (args.reduction == kReductionNone) {
      output[row] = to_output<T>(loss);
    } else {
      row_losses[row] = static_cast<double>(loss);
    }
  }
}

template <typename T>
__global__ void nll_loss_backward_elements(ClassLossArgs args, const T* grad, int64_t grad_stride, T* grad_scores,
                                           const int64_t* counted) {
  using C = compute_t<T>;
  const int64_t count = args.rows * args.classes;
  for (int64_t element = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; element < count;
       element += int64_t{blockDim.x} * gridDim.x) {
    const int64_t row = element / args.classes;
    const int64_t target = target_of(args, row);
    C value = 0;
    if (target == -2) {
      value = std::numeric_limits<C>::quiet_NaN();
    } else if (target == element % args.classes) {
      value = -grad_scale_of<T, C>(args, grad, grad_stride, counted, row);
    }
    grad_scores[element] = to_output<T>(value);
  }
}

// Element offset of an operand for the output's linear index (row-major over shape's sizes).
__device__ __forceinline__ int64_t offset_of(int64_t linear, const LaunchShape& shape, const StridedOperand& operand) {
  if (operand.contiguous) return linear;
  int64_t offset = 0;
  for (int dim = shape.dims - 1; dim >= 0; --dim) {
    offset += (linear % shape.sizes[dim]) * operand.strides[dim];
    linear /= shape.sizes[dim];
  }
  return offset;
}

template <typename Acc, typename T>
__device__ __forceinline__ Acc squared_difference(const StridedOperand& input, const StridedOperand& target,
                                                  const LaunchShape& shape, int64_t linear) {
  const Acc difference = static_cast<Acc>(load(static_cast<const T*>(input.data), offset_of(linear, shape, input))) -
                         static_cast<Acc>(load(static_cast<const T*>(target.data), offset_of(linear, shape, target)));
  return difference * difference;
}

template <typename T>
__global__ void mse_elements(StridedOperand input, StridedOperand target, LaunchShape shape, T* output) {
  using C = compute_t<T>;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < shape.numel; i += int64_t{blockDim.x} * gridDim.x)
    output[i] = to_output<T>(squared_difference<C, T>(input, target, shape, i));
}

// Block b sums the squares of elements [b * chunk, (b + 1) * chunk) into partials[b].
template <typename T>
__global__ void __launch_bounds__(kLossBlock) mse_partial_sums(StridedOperand input, StridedOperand target,
                                                               LaunchShape shape, int64_t chunk,
                                                               accumulate_t<T>* partials) {
  using Acc = accumulate_t<T>;
  const int64_t begin = int64_t{blockIdx.x} * chunk;
  const int64_t end = begin + chunk < shape.numel ? begin + chunk : shape.numel;
  Acc total = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kLossBlock) total += squared_difference<Acc, T>(input, target, shape, i);
  total = block_all_reduce<kLossBlock>(total, AddOp{});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <typename T>
__global__ void __launch_bounds__(kLossBlock) mse_finish(const accumulate_t<T>* partials, int64_t blocks, int64_t numel,
                                                         int64_t reduction, T* output) {
  using Acc = accumulate_t<T>;
  Acc total = 0;
  for (int64_t b = threadIdx.x; b < blocks; b += kLossBlock) total += partials[b];
  total = block_all_reduce<kLossBlock>(total, AddOp{});
  if (threadIdx.x == 0)
    output[0] = to_output<T>(reduction == kReductionMean ? total / static_cast<Acc>(numel) : total);  // 0/0: NaN
}

int64_t mse_blocks(int64_t numel) {
  const int64_t blocks = (numel + kMseChunk - 1) / kMseChunk;
  return blocks < 1 ? 1 : (blocks > kMseMaxBlocks ? kMseMaxBlocks : blocks);
}

}  // namespace

}  // namespace detail

int launch_nll_loss(DType dtype, const ClassLossArgs& args, void* output, void* scratch) {
  const auto stream = static_cast<cudaStream_t>(args.stream);
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* out = static_cast<T*>(output);
    double* row_losses = detail::row_losses_of(scratch);
    if (args.rows > 0)
      detail::nll_loss_rows<T><<<detail::grid_for((args.rows + 255) / 256, 65536), 256, 0, stream>>>(args, out, row_losses);
    if (args.reduction != detail::kReductionNone)
      detail::finish_class_loss<T><<<1, detail::kLossBlock, 0, stream>>>(args, row_losses, out);
  });
  return detail::status_of_launch();
}

int launch_nll_loss_backward(DType dtype, const ClassLossArgs& args, const void* grad, int64_t grad_stride,
                             void* grad_scores, void* scratch) {
  const int64_t count = args.rows * args.classes;
  if (count == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(args.stream);
  int64_t* counted = detail::counted_of(scratch, args);
  detail::count_targets<<<1, detail::kLossBlock, 0, stream>>>(args, counted);
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    detail::nll_loss_backward_elements<T><<<detail::grid_for((count + 255) / 256, 65536), 256, 0, stream>>>(
        args, static_cast<const T*>(grad), grad_stride, static_cast<T*>(grad_scores), counted);
  });
  return detail::status_of_launch();
}

int64_t mse_loss_scratch_bytes(const LaunchShape& shape) {
  return detail::mse_blocks(shape.numel) * static_cast<int64_t>(sizeof(double));
}

int launch_mse_loss(DType dtype, int64_t reduction, const StridedOperand& input, const StridedOperand& target,
                    const LaunchShape& shape, void* output, void* scratch) {
  const auto stream = static_cast<cudaStream_t>(shape.stream);
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* out = static_cast<T*>(output);
    if (reduction == detail::kReductionNone) {
      if (shape.numel > 0)
        detail::mse_elements<T><<<detail::grid_for((shape.numel + 255) / 256, 65536), 256, 0, stream>>>(input, target,
                                                                                                      shape, out);
      return;
    }
    using Acc = detail::accumulate_t<T>;
    const int64_t blocks = detail::mse_blocks(shape.numel);
    const int64_t chunk = (shape.numel + blocks - 1) / blocks;
    Acc* partials = static_cast<Acc*>(scratch);
    detail::mse_partial_sums<T><<<static_cast<unsigned>(blocks), detail::kLossBlock, 0, stream>>>(input, target, shape,
                                                                                                 chunk, partials);
    detail::mse_finish<T><<<1, detail::kLossBlock, 0, stream>>>(partials, blocks, shape.numel, reduction, out);
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
