// CUDA kernel of the cumsum registry op: the input made contiguous is already the dense
// [outer, length, inner] layout of kernels/cuda/scan.h around the scanned dim, and so is the
// (contiguous) output.
#include "kernels/cuda/scan.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/dtype.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

void cumsum_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  const Tensor packed = contiguous_on_device(input);
  ScanLayout layout;
  layout.stream = stream_of(input);
  for (int d = 0; d < input.dim(); ++d) {
    if (d < dim) layout.outer *= input.sizes()[d];
    if (d == dim) layout.length = input.sizes()[d];
    if (d > dim) layout.inner *= input.sizes()[d];
  }
  launch_checked(launch_cumsum(input.dtype(), packed.raw_data_ptr(), outputs[0].raw_data_ptr(), layout,
                               call.attrs.get<bool>("reverse")));
}

void register_scan_cuda_kernels(OpRegistry& registry) { registry.set_kernel("cumsum", DeviceType::CUDA, cumsum_cuda); }

const OpRegistration registration(register_scan_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
