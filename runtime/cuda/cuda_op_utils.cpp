// Helpers shared by the CUDA op files; see cuda_op_utils.h.
#include "runtime/cuda/cuda_op_utils.h"

#include <cuda_runtime_api.h>

#include "kernels/cpu/copy_kernels.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

void launch_checked(int status, std::source_location where) {
  cuda_check(static_cast<cudaError_t>(status), where);
}

void* stream_of(const Tensor& tensor) { return current_stream(tensor.device()).handle; }

LaunchShape shape_of(const Tensor& out) {
  check(out.dim() <= kMaxDims, "cuda: tensors of more than {} dims are not supported yet (got {})",
        kMaxDims, out.dim());
  LaunchShape shape;
  shape.dims = static_cast<int>(out.dim());
  for (int dim = 0; dim < shape.dims; ++dim) shape.sizes[dim] = out.sizes()[dim];
  shape.numel = out.numel();
  shape.stream = stream_of(out);
  return shape;
}

StridedOperand operand_of(const Tensor& input, const LaunchShape& shape) {
  StridedOperand operand;
  operand.data = static_cast<const char*>(input.raw_data_ptr());
  const int lead = shape.dims - static_cast<int>(input.dim());
  for (int dim = 0; dim < static_cast<int>(input.dim()); ++dim)
    operand.strides[lead + dim] = input.sizes()[dim] == 1 ? 0 : input.strides()[dim];
  operand.contiguous = input.is_contiguous() && input.numel() == shape.numel;
  return operand;
}

Tensor as_dtype(const Tensor& tensor, DType dtype) {
  if (tensor.dtype() == dtype) return tensor;
  Tensor converted = make_tensor(tensor.sizes(), dtype, tensor.device());
  const LaunchShape shape = shape_of(converted);
  launch_checked(launch_cast(dtype, converted.raw_data_ptr(), tensor.dtype(), operand_of(tensor, shape), shape));
  return converted;
}

Tensor contiguous_on_device(const Tensor& tensor) {
  if (tensor.is_contiguous()) return tensor;
  if (tensor.device().is_cpu()) {
    Tensor packed = make_tensor(tensor.sizes(), tensor.dtype(), tensor.device());
    TensorList staging{packed};
    const Tensor inputs[] = {tensor};
    const OpCall call{registry().get("clone"), inputs, Attrs{}};
    cpu::clone_kernel(call, staging);
    return packed;
  }
  return packed_copy(tensor);
}

Tensor packed_copy(const Tensor& tensor) {
  DeviceGuard guard(tensor.device());
  Tensor packed = make_tensor(tensor.sizes(), tensor.dtype(), tensor.device());
  const LaunchShape shape = shape_of(packed);
  launch_checked(launch_cast(tensor.dtype(), packed.raw_data_ptr(), tensor.dtype(), operand_of(tensor, shape), shape));
  return packed;
}

}  // namespace ember::cuda
