// CUDA kernels of the fused optimizer steps sgd_step_ and adam_step_ (defined in
// runtime/ops/optim_ops.cpp): the same argument checks as the CPU, then one kernel pass per
// parameter (kernels/cuda/optim.cu) that writes the parameter and its state through their strides.
// The ops take one parameter per call; the multi-tensor ops (multi_tensor_optim_cuda_ops.cpp) batch
// a group's parameters into few launches, and use these kernels for non-contiguous parameters.
#include <initializer_list>

#include "kernels/cuda/optim.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/optim_step_attrs.h"
#include "runtime/ops/optim_step_checks.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

SgdStepAttrs sgd_step_attrs_of(const Attrs& attrs) {
  return {.lr = attrs.get<double>("lr"),
          .momentum = attrs.get<double>("momentum"),
          .dampening = attrs.get<double>("dampening"),
          .weight_decay = attrs.get<double>("weight_decay"),
          .nesterov = attrs.get<bool>("nesterov"),
          .first_step = attrs.get<bool>("first_step"),
          .maximize = attrs.get<bool>("maximize")};
}

AdamStepAttrs adam_step_attrs_of(const Attrs& attrs) {
  return {.lr = attrs.get<double>("lr"),
          .beta1 = attrs.get<double>("beta1"),
          .beta2 = attrs.get<double>("beta2"),
          .eps = attrs.get<double>("eps"),
          .weight_decay = attrs.get<double>("weight_decay"),
          .step = attrs.get<int64_t>("step"),
          .amsgrad = attrs.get<bool>("amsgrad"),
          .decoupled = attrs.get<bool>("decoupled"),
          .maximize = attrs.get<bool>("maximize")};
}

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

// The step's tensors (inputs `which`, all the parameter's shape and dtype after the checks).
StepTensors step_tensors(const OpCall& call, std::initializer_list<int> which) {
  const Tensor& param = call.input(0);
  check(param.dim() <= kMaxDims, "{}: tensors of more than {} dims are not supported on CUDA yet (got {})",
        call.op.name, kMaxDims, param.dim());
  StepTensors tensors;
  tensors.dims = static_cast<int>(param.dim());
  for (int d = 0; d < tensors.dims; ++d) tensors.sizes[d] = param.size(d);
  tensors.numel = param.numel();
  for (int i : which) {
    const Tensor& tensor = call.input(i);
    const int k = tensors.count++;
    tensors.data[k] = tensor.raw_data_ptr();
    for (int d = 0; d < tensors.dims; ++d) tensors.strides[k][d] = tensor.strides()[d];
    tensors.contiguous = tensors.contiguous && tensor.is_contiguous();
  }
  return tensors;
}

void sgd_step_cuda(const OpCall& call, TensorList&) {
  check_sgd_step(call);
  const Tensor& param = call.input(0);
  DeviceGuard guard(param.device());
  const SgdStepAttrs step = sgd_step_attrs_of(call.attrs);
  const StepTensors tensors = step.momentum != 0.0 ? step_tensors(call, {0, 1, 2}) : step_tensors(call, {0, 1});
  launch_checked(launch_sgd_step(param.dtype(), tensors, step, stream_of(param)));
}

void adam_step_cuda(const OpCall& call, TensorList&) {
  check_adam_step(call);
  const Tensor& param = call.input(0);
  DeviceGuard guard(param.device());
  const AdamStepAttrs step = adam_step_attrs_of(call.attrs);
  const StepTensors tensors = step.amsgrad ? step_tensors(call, {0, 1, 2, 3, 4}) : step_tensors(call, {0, 1, 2, 3});
  launch_checked(launch_adam_step(param.dtype(), tensors, step, stream_of(param)));
}

void register_optim_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("sgd_step_", kCuda, sgd_step_cuda);
  registry.set_kernel("adam_step_", kCuda, adam_step_cuda);
}

const OpRegistration registration(register_optim_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
