// CUDA cross_entropy (fused log_softmax + nll) and its backward, one warp per row of up to 1024
// classes and one block per longer row, in fp32 (fp64 for float64). As on the CPU, the row's sum
// of exp(z - max) and what is computed from it are double: on a confident row that sum is ~1 and
// the loss ~1e-6, which a float sum would round away. Per non-ignored row with target t,
// smoothing e and C classes (see kernels/cpu/loss_kernels.h):
//   loss = (1 - e) (lse - z_t) + e/C (C lse - sum_c z_c),  d loss / d z_c = softmax_c - e/C - (1 - e)[c == t].
#include "kernels/cuda/loss_common.cuh"
#include "kernels/cuda/softmax_math.cuh"

namespace ember::cuda {

namespace detail {

namespace {

template <int Group, typename T> __device__ __forceinline__ T group_all_reduce_sum(T value) {
  if constexpr (Group == 32) {
    return warp_all_reduce(value, AddOp{});
  } else {
    return block_all_reduce<Group>(value, AddOp{});
  }
}
template <int Group, typename T> __device__ __forceinline__ T group_all_reduce_max(T value) {
  if constexpr (Group == 32) {
    return warp_all_reduce(value, MaxOp{});
  } else {
    return block_all_reduce<Group>(value, MaxOp{});
  }
}

// The row's maximum and sum of exp(z - max) (and, with smoothing, the sum of max - z), all lanes
// of the group holding the same values. Gaps from the maximum, not the logits themselves: with
// logits near 1e17 a sum of z (or max + log(total)) has no digits left for the loss.
template <int Group, typename T, typename C>
__device__ __forceinline__ void row_statistics(const ClassLossArgs& args, const T* row, int lane, bool with_sum,
                                               C& maximum, double& total, double& gap_sum) {
  maximum = negative_infinity<C>();
  for (int64_t c = lane; c < args.classes; c += Group) maximum = MaxOp{}(maximum, load(row, c * args.class_stride));
  maximum = group_all_reduce_max<Group>(maximum);
  total = 0;
  gap_sum = 0;
  for (int64_t c = lane; c < args.classes; c += Group) {
    const C value = load(row, c * args.class_stride);
    total += static_cast<double>(exp_of(value - maximum));
    if (with_sum) gap_sum += static_cast<double>(maximum) - static_cast<double>(value);
  }
  total = group_all_reduce_sum<Group>(total);
  if (with_sum) gap_sum = group_all_reduce_sum<Group>(gap_sum);
}

// Groups of `Group` threads per row; the row loop is uniform across a group (and across the
// block when Group is the block), so the group reductions never diverge.
template <int Group, typename T>
__global__ void __launch_bounds__(kLossBlock) cross_entropy_rows(ClassLossArgs args, T* output, double* row_losses) {
  using C = compute_t<T>;
  constexpr int kGroups = kLossBlock / Group;
  const T* scores = static_cast<const T*>(args.scores);
  const int lane = threadIdx.x % Group;
  const double keep = 1.0 - args.label_smoothing;
  const double spread = args.label_smoothing / static_cast<double>(args.classes);
  const bool smoothing = args.label_smoothing != 0.0;
  for (int64_t first = int64_t{blockIdx.x} * kGroups; first < args.rows; first += int64_t{gridDim.x} * kGroups) {
    const int64_t row = first + threadIdx.x / Group;
    if (Group == kLossBlock || row < args.rows) {  // a whole block always has its row
      const int64_t target = target_of(args, row);
      double loss = 0;
      if (target == -2) {
        loss = std::numeric_limits<double>::quiet_NaN();
      } else if (target >= 0) {
        const T* data = scores + row * args.row_stride;
        C maximum;
        double total, gap_sum;
        row_statistics<Group>(args, data, lane, smoothing, maximum, total, gap_sum);
        // -log p_t = (max - z_t) + log(total); sum_c -log p_c = sum_c (max - z_c) + C log(total).
        const double log_total = log(total);
        const double nll =
            (static_cast<double>(maximum) - static_cast<double>(load(data, target * args.class_stride))) + log_total;
        loss = smoothing ? keep * nll + spread * (gap_sum + static_cast<double>(args.classes) * log_total) : nll;
      }
      if (lane == 0) {
        if (args.reduction == kReductionNone) {
          output[row] = to_output<T>(loss);
        } else {
          row_losses[row] = loss;
        }
      }
    }
  }
}

template <int Group, typename T>
__global__ void __launch_bounds__(kLossBlock) cross_entropy_backward_rows(ClassLossArgs args, const T* grad,
                                                                          int64_t grad_stride, T* grad_scores,
                                                                          const int64_t* counted) {
  using C = compute_t<T>;
  constexpr int kGroups = kLossBlock / Group;
  const T* scores = static_cast<const T*>(args.scores);
  const int lane = threadIdx.x % Group;
  const C keep = static_cast<C>(1.0 - args.label_smoothing);
  const C spread = static_cast<C>(args.label_smoothing / static_cast<double>(args.classes));
  for (int64_t first = int64_t{blockIdx.x} * kGroups; first < args.rows; first += int64_t{gridDim.x} * kGroups) {
    const int64_t row = first + threadIdx.x / Group;
    if (Group != kLossBlock && row >= args.rows) continue;
    const int64_t target = target_of(args, row);
    T* out = grad_scores + row * args.classes;
    if (target < 0) {  // ignored: zeros; out of range: NaN
      const C fill = target == -1 ? C(0) : std::numeric_limits<C>::quiet_NaN();
      for (int64_t c = lane; c < args.classes; c += Group) out[c] = to_output<T>(fill);
      continue;
    }
    const T* data = scores + row * args.row_stride;
    C maximum;
    double total, unused_gaps;
    row_statistics<Group>(args, data, lane, false, maximum, total, unused_gaps);
    const C inverse = static_cast<C>(1.0 / total);
    const C scale = grad_scale_of<T, C>(args, grad, grad_stride, counted, row);
    for (int64_t c = lane; c < args.classes; c += Group) {
      const C probability = exp_of(load(data, c * args.class_stride) - maximum) * inverse;
      out[c] = to_output<T>(scale * (probability - spread - (c == target ? keep : C(0))));
    }
  }
}

// Blocks for `rows` rows with groups of `group` threads each.
unsigned blocks_for_rows(int64_t rows, int group) {
  return grid_for((rows + kLossBlock / group - 1) / (kLossBlock / group), 65536);
}

}  // namespace

}  // namespace detail

int64_t class_loss_scratch_bytes(const ClassLossArgs& args) {
  return args.rows * static_cast<int64_t>(sizeof(double)) + static_cast<int64_t>(sizeof(int64_t));
}

int launch_cross_entropy(DType dtype, const ClassLossArgs& args, void* output, void* scratch) {
  const auto stream = static_cast<cudaStream_t>(args.stream);
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* out = static_cast<T*>(output);
    double* row_losses = detail::row_losses_of(scratch);
    if (args.rows > 0) {
      if (args.classes <= detail::kWarpRow) {
        detail::cross_entropy_rows<32, T><<<detail::blocks_for_rows(args.rows, 32), detail::kLossBlock, 0, stream>>>(
            args, out, row_losses);
      } else {
        detail::cross_entropy_rows<detail::kLossBlock, T>
            <<<detail::blocks_for_rows(args.rows, detail::kLossBlock), detail::kLossBlock, 0, stream>>>(args, out, row_losses);
      }
    }
    if (args.reduction != detail::kReductionNone)
      detail::finish_class_loss<T><<<1, detail::kLossBlock, 0, stream>>>(args, row_losses, out);
  });
  return detail::status_of_launch();
}

int launch_cross_entropy_backward(DType dtype, const ClassLossArgs& args, const void* grad, int64_t grad_stride,
                                  void* grad_scores, void* scratch) {
  if (args.rows * args.classes == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(args.stream);
  int64_t* counted = detail::counted_of(scratch, args);
  detail::count_targets<<<1, detail::kLossBlock, 0, stream>>>(args, counted);
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* typed_grad = static_cast<const T*>(grad);
    T* out = static_cast<T*>(grad_scores);
    if (args.classes <= detail::kWarpRow) {
      detail::cross_entropy_backward_rows<32, T><<<detail::blocks_for_rows(args.rows, 32), detail::kLossBlock, 0, stream>>>(
          args, typed_grad, grad_stride, out, counted);
    } else {
      detail::cross_entropy_backward_rows<detail::kLossBlock, T>
          <<<detail::blocks_for_rows(args.rows, detail::kLossBlock), detail::kLossBlock, 0, stream>>>(
              args, typed_grad, grad_stride, out, counted);
    }
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
