// CUDA kernels of the sort and topk registry ops: the input made contiguous is already the dense
// [outer, length, inner] layout of kernels/cuda/sort.h around the sorted dim, and so are the
// (contiguous) outputs, with `kept` elements along it. Rows longer than kSharedSortLength get a
// global workspace from the device's caching allocator (stream-ordered, so freeing it when this
// function returns is safe for the queued kernel).
#include "kernels/cuda/sort.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/dtype.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

void sort_cuda_along(const OpCall& call, TensorList& outputs, bool descending) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const Tensor packed = contiguous_on_device(input);
  SortLayout layout;
  layout.stream = stream_of(input);
  if (input.dim() > 0) {
    const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
    for (int d = 0; d < input.dim(); ++d) {
      if (d < dim) layout.outer *= input.sizes()[d];
      if (d == dim) layout.length = input.sizes()[d];
      if (d > dim) layout.inner *= input.sizes()[d];
    }
    layout.kept = outputs[0].sizes()[dim];
  }
  const int64_t workspace_bytes = sort_workspace_bytes(input.dtype(), layout);
  Tensor workspace;
  if (workspace_bytes > 0) workspace = make_tensor({(workspace_bytes + 7) / 8}, kInt64, input.device());
  launch_checked(launch_sort(input.dtype(), packed.raw_data_ptr(), outputs[0].raw_data_ptr(),
                             outputs[1].raw_data_ptr(), layout, descending,
                             workspace.defined() ? workspace.raw_data_ptr() : nullptr));
}

void sort_cuda(const OpCall& call, TensorList& outputs) {
  sort_cuda_along(call, outputs, call.attrs.get<bool>("descending"));
}

void topk_cuda(const OpCall& call, TensorList& outputs) {
  sort_cuda_along(call, outputs, call.attrs.get<bool>("largest"));
}

void register_sort_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("sort", DeviceType::CUDA, sort_cuda);
  registry.set_kernel("topk", DeviceType::CUDA, topk_cuda);
}

const OpRegistration registration(register_sort_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
