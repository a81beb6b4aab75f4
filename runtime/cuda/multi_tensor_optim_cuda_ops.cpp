// CUDA kernels of the multi-tensor optimizer steps _multi_sgd_step_ and _multi_adam_step_ (see
// runtime/optim/multi_tensor_steps.h): the checks the CPU kernel runs, then the contiguous
// parameters go into tables of up to kMultiTensorCapacity tensors, one launch per table
// (kernels/cuda/multi_tensor_optim.cu); a parameter with a non-contiguous tensor takes the
// per-parameter kernel, and empty ones are skipped. No allocation: the table is a kernel parameter.
#include "kernels/cuda/multi_tensor_optim.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/optim_step_attrs.h"
#include "runtime/ops/multi_tensor_steps_checks.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

// Fills tables with the contiguous, non-empty parameters and calls launch(table) per full table
// and for the rest; every other parameter goes through the per-parameter op's CUDA kernel.
template <typename Launch>
void run_batched(const OpCall& call, Launch&& launch) {
  const Kernel single = single_step_op(call).kernel_for(call.input(0).device());
  internal_assert(single != nullptr, "the per-parameter optimizer step has no CUDA kernel");
  MultiTensorTable table;
  for (int i = 0; i < multi_step_count(call); ++i) {
    const OpCall slice = multi_step_slice(call, i);
    if (slice.input(0).numel() == 0) continue;
    bool contiguous = true;
    for (const Tensor& tensor : slice.inputs) contiguous = contiguous && (!tensor.defined() || tensor.is_contiguous());
    if (!contiguous) {
      TensorList written;
      single(slice, written);
      continue;
    }
    const int t = table.count;
    table.numel[t] = slice.input(0).numel();
    for (size_t role = 0; role < slice.inputs.size(); ++role)
      table.data[role][t] = slice.inputs[role].defined() ? slice.inputs[role].raw_data_ptr() : nullptr;
    close_table_entry(table);
    if (table.count == kMultiTensorCapacity) {
      launch(table);
      table = MultiTensorTable{};
    }
  }
  if (table.count > 0) launch(table);
}

void multi_sgd_step_cuda(const OpCall& call, TensorList&) {
  check_multi_step(call);
  if (call.inputs.empty()) return;
  const Tensor& first = call.input(0);
  DeviceGuard guard(first.device());
  const SgdStepAttrs attrs = sgd_step_attrs_of(call.attrs);
  run_batched(call, [&](const MultiTensorTable& table) {
    launch_checked(launch_multi_sgd_step(first.dtype(), table, attrs, stream_of(first)));
  });
  bump_multi_step_versions(call);
}

void multi_adam_step_cuda(const OpCall& call, TensorList&) {
  check_multi_step(call);
  if (call.inputs.empty()) return;
  const Tensor& first = call.input(0);
  DeviceGuard guard(first.device());
  const AdamStepAttrs attrs = adam_step_attrs_of(call.attrs);
  run_batched(call, [&](const MultiTensorTable& table) {
    launch_checked(launch_multi_adam_step(first.dtype(), table, attrs, stream_of(first)));
  });
  bump_multi_step_versions(call);
}

void register_multi_tensor_optim_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("_multi_sgd_step_", kCuda, multi_sgd_step_cuda);
  registry.set_kernel("_multi_adam_step_", kCuda, multi_adam_step_cuda);
}

const OpRegistration registration(register_multi_tensor_optim_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
