// CUDA kernels of the loss registry ops: cross_entropy, cross_entropy_backward,
// cross_entropy_with_backward, nll_loss, nll_loss_backward and mse_loss. Scores and targets are
// passed with their strides (no copies); kernels in kernels/cuda/loss*.cu. An out-of-range target
// gives NaN and is written to the device's error record, raised as an ember::Error at the next
// synchronization (or right after the op with EMBER_CUDA_CHECK_INDICES=1): checking on the host
// would synchronize every loss call.
#include <array>

#include "kernels/cpu/class_loss.h"
#include "kernels/cuda/loss.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/index_cuda_common.h"
#include "runtime/dtype.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

// scores [N, C] with target [N], or [C] with a 0-d target (one row); shapes are already checked.
// The layout is the CPU kernels' (targets are checked on the device instead).
ClassLossArgs class_loss_args(const OpCall& call, const Tensor& scores, const Tensor& target) {
  ClassLossArgs args;
  static_cast<ClassLossLayout&>(args) = cpu::class_loss_layout(call, scores, target);
  args.scores = scores.raw_data_ptr();
  args.stream = stream_of(scores);
  return args;
}

// Per-row losses and the target count live here until the kernels queued on this stream ran.
Tensor class_loss_scratch(const ClassLossArgs& args, Device device) {
  return make_tensor({class_loss_scratch_bytes(args) / 8}, kInt64, device);
}

// With EMBER_CUDA_CHECK_INDICES=1 the op raises a bad target itself (a sync per call).
void raise_bad_target(const OpCall& call, const IndexCheck& target_check, const Tensor& scores) {
  if (const auto bad = target_check.bad_index())
    fail("{}: target {} at index {} is out of range [0, {}) (scores {})", call.op.name, bad->value, bad->position,
         bad->bound, scores.sizes());
}

template <bool cross_entropy>
void class_loss_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& scores = call.input(0);
  DeviceGuard guard(scores.device());
  ClassLossArgs args = class_loss_args(call, scores, call.input(1));
  const IndexCheck target_check(scores.device(), cross_entropy ? DeviceErrorOp::CrossEntropy : DeviceErrorOp::NllLoss);
  args.error = target_check.flag();
  const Tensor scratch = class_loss_scratch(args, scores.device());
  const auto launch = cross_entropy ? launch_cross_entropy : launch_nll_loss;
  launch_checked(launch(scores.dtype(), args, outputs[0].raw_data_ptr(), scratch.raw_data_ptr()));
  raise_bad_target(call, target_check, scores);
}

// (grad, scores, target): grad is one value for mean / sum, or per row for none.
template <bool cross_entropy>
void class_loss_backward_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& scores = call.input(1);
  DeviceGuard guard(scores.device());
  ClassLossArgs args = class_loss_args(call, scores, call.input(2));
  const IndexCheck target_check(scores.device(), cross_entropy ? DeviceErrorOp::CrossEntropyBackward
                                                               : DeviceErrorOp::NllLossBackward);
  args.error = target_check.flag();
  const Tensor grad = contiguous_on_device(call.input(0));
  const int64_t grad_stride = args.reduction == 0 && grad.dim() == 1 ? 1 : 0;
  const Tensor scratch = class_loss_scratch(args, scores.device());
  const auto launch = cross_entropy ? launch_cross_entropy_backward : launch_nll_loss_backward;
  launch_checked(launch(scores.dtype(), args, grad.raw_data_ptr(), grad_stride, outputs[0].raw_data_ptr(),
                        scratch.raw_data_ptr()));
  raise_bad_target(call, target_check, scores);
}

// (grad, scores, target) -> (loss, grad_scores): the two kernels above in turn, so each output
// has its own op's bits. Compiled CPU steps fuse the pair into one pass; on CUDA there is no
// fused kernel, and the compile stage leaves the pair as it is (graph/loss_fusion.cpp), so this
// runs only when the op is called directly.
void cross_entropy_with_backward_cuda(const OpCall& call, TensorList& outputs) {
  const std::array<Tensor, 2> forward_inputs{call.input(1), call.input(2)};
  const OpCall forward{call.op, forward_inputs, call.attrs};
  class_loss_cuda<true>(forward, outputs);
  TensorList gradient{outputs[1]};
  class_loss_backward_cuda<true>(call, gradient);
}

void mse_loss_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const Tensor& target = call.input(1);
  DeviceGuard guard(input.device());
  const int64_t reduction = call.attrs.get<int64_t>("reduction");
  // The broadcast shape (the output's own only for reduction none).
  const Dims shape_sizes = broadcast_shapes(input.sizes(), target.sizes(), "mse_loss");
  check(shape_sizes.size() <= kMaxDims, "mse_loss: tensors of more than {} dims are not supported on CUDA yet (got {})",
        kMaxDims, shape_sizes.size());
  LaunchShape shape;
  shape.dims = shape_sizes.size();
  for (int d = 0; d < shape.dims; ++d) shape.sizes[d] = shape_sizes[d];
  shape.numel = shape_sizes.product();
  shape.stream = stream_of(input);
  const Tensor scratch = reduction == 0 ? Tensor() : make_tensor({mse_loss_scratch_bytes(shape) / 8}, kInt64, input.device());
  launch_checked(launch_mse_loss(input.dtype(), reduction, operand_of(input, shape), operand_of(target, shape), shape,
                                 outputs[0].raw_data_ptr(), reduction == 0 ? nullptr : scratch.raw_data_ptr()));
}

void register_loss_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("cross_entropy", kCuda, class_loss_cuda<true>);
  registry.set_kernel("nll_loss", kCuda, class_loss_cuda<false>);
  registry.set_kernel("cross_entropy_backward", kCuda, class_loss_backward_cuda<true>);
  registry.set_kernel("cross_entropy_with_backward", kCuda, cross_entropy_with_backward_cuda);
  registry.set_kernel("nll_loss_backward", kCuda, class_loss_backward_cuda<false>);
  registry.set_kernel("mse_loss", kCuda, mse_loss_cuda);
}

const OpRegistration registration(register_loss_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
