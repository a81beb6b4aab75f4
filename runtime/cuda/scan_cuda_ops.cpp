// CUDA kernels of the running-reduction registry ops (cumsum, cumprod, cummax, cummin,
// logcumsumexp): the input made contiguous is already the dense [outer, length, inner] layout of
// kernels/cuda/scan.h around the scanned dim, and so are the (contiguous) outputs.
#include "kernels/cuda/scan.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/dtype.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

ScanLayout layout_of(const OpCall& call) {
  const Tensor& input = call.input(0);
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  ScanLayout layout;
  layout.stream = stream_of(input);
  for (int d = 0; d < input.dim(); ++d) {
    if (d < dim) layout.outer *= input.sizes()[d];
    if (d == dim) layout.length = input.sizes()[d];
    if (d > dim) layout.inner *= input.sizes()[d];
  }
  return layout;
}

void cumsum_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const Tensor packed = contiguous_on_device(input);
  launch_checked(launch_cumsum(input.dtype(), packed.raw_data_ptr(), outputs[0].raw_data_ptr(), layout_of(call),
                               call.attrs.get<bool>("reverse")));
}

void cumprod_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const Tensor packed = contiguous_on_device(input);
  launch_checked(launch_cumprod(input.dtype(), packed.raw_data_ptr(), outputs[0].raw_data_ptr(), layout_of(call)));
}

void cumextremum_cuda(const OpCall& call, TensorList& outputs, bool max) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const Tensor packed = contiguous_on_device(input);
  launch_checked(launch_cumextremum(input.dtype(), packed.raw_data_ptr(), outputs[0].raw_data_ptr(),
                                    static_cast<int64_t*>(outputs[1].raw_data_ptr()), layout_of(call), max));
}
void cummax_cuda(const OpCall& call, TensorList& outputs) { cumextremum_cuda(call, outputs, true); }
void cummin_cuda(const OpCall& call, TensorList& outputs) { cumextremum_cuda(call, outputs, false); }

void logcumsumexp_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const Tensor packed = contiguous_on_device(input);
  launch_checked(launch_logcumsumexp(input.dtype(), packed.raw_data_ptr(), outputs[0].raw_data_ptr(),
                                     layout_of(call), call.attrs.get<bool>("reverse")));
}

void register_scan_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("cumsum", DeviceType::CUDA, cumsum_cuda);
  registry.set_kernel("cumprod", DeviceType::CUDA, cumprod_cuda);
  registry.set_kernel("cummax", DeviceType::CUDA, cummax_cuda);
  registry.set_kernel("cummin", DeviceType::CUDA, cummin_cuda);
  registry.set_kernel("logcumsumexp", DeviceType::CUDA, logcumsumexp_cuda);
}

const OpRegistration registration(register_scan_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
