// CUDA kernels of softmax, log_softmax, softmax_backward and log_softmax_backward (attr dim).
// Operands are made contiguous on the device, so the dim splits them into a dense
// [outer, length, inner] layout that kernels/cuda/softmax.h takes.
#include "kernels/cuda/softmax.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/dtype.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

// The layout of a contiguous tensor of `sizes` split at `dim` (a 0-d tensor is one element).
ReduceLayout layout_along(const Dims& sizes, int dim, void* stream) {
  ReduceLayout layout;
  layout.stream = stream;
  for (int d = 0; d < sizes.size(); ++d) {
    if (d < dim) {
      layout.outer *= sizes[d];
    } else if (d == dim) {
      layout.reduce = sizes[d];
    } else {
      layout.inner *= sizes[d];
    }
  }
  return layout;
}

template <bool log>
void softmax_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  const Tensor packed = contiguous_on_device(input);
  const ReduceLayout layout = layout_along(input.sizes(), dim, stream_of(input));
  launch_checked(launch_softmax(log, input.dtype(), packed.raw_data_ptr(), outputs[0].raw_data_ptr(), layout));
}

template <bool log>
void softmax_backward_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& output = call.input(1);
  DeviceGuard guard(output.device());
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), output.dim(), call.op.name);
  const Tensor grad = contiguous_on_device(call.input(0));
  const Tensor packed_output = contiguous_on_device(output);
  const ReduceLayout layout = layout_along(output.sizes(), dim, stream_of(output));
  launch_checked(launch_softmax_backward(log, output.dtype(), grad.raw_data_ptr(), packed_output.raw_data_ptr(),
                                         outputs[0].raw_data_ptr(), layout));
}

void register_softmax_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("softmax", kCuda, softmax_cuda<false>);
  registry.set_kernel("log_softmax", kCuda, softmax_cuda<true>);
  registry.set_kernel("softmax_backward", kCuda, softmax_backward_cuda<false>);
  registry.set_kernel("log_softmax_backward", kCuda, softmax_backward_cuda<true>);
}

const OpRegistration registration(register_softmax_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
