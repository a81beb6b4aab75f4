// CUDA kernel of cat (defined in runtime/ops/join_ops.cpp): inputs that are not contiguous or not
// in the output's (promoted) dtype are first packed into that form on the device, then one launch
// per kMaxCatPieces inputs copies every input's rows into its window of the output.
#include "kernels/cpu/join_kernels.h"
#include "kernels/cuda/join.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

void cat_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), out.dim(), "cat");
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= out.size(d);
  const int64_t element = static_cast<int64_t>(out.element_size());
  const int64_t inner_elements = out.numel() / (outer * out.size(dim));  // after dim
  // Packed inputs live until every launch that reads them is queued; after that, the caching
  // allocator hands their memory only to later work on this stream, which runs after the copy.
  std::vector<Tensor> packed;
  packed.reserve(call.inputs.size());
  CatBatch batch;
  batch.out = out.raw_data_ptr();
  batch.outer = outer;
  batch.out_row_bytes = out.size(dim) * inner_elements * element;
  int64_t start = 0;
  for (const Tensor& input : call.inputs) {
    if (cpu::cat_skips(input.sizes())) continue;
    const int64_t length = input.size(dim);
    if (input.numel() > 0) {
      packed.push_back(contiguous_on_device(as_dtype(input, out.dtype())));
      batch.pieces[batch.count++] = CatPiece{.source = packed.back().raw_data_ptr(),
                                             .row_bytes = length * inner_elements * element,
                                             .offset_bytes = start * inner_elements * element};
      if (batch.count == kMaxCatPieces) {
        launch_checked(launch_cat(batch, stream_of(out)));
        batch.count = 0;
      }
    }
    start += length;
  }
  if (batch.count > 0) launch_checked(launch_cat(batch, stream_of(out)));
}

void register_join_cuda_kernels(OpRegistry& registry) { registry.set_kernel("cat", DeviceType::CUDA, cat_cuda); }

const OpRegistration registration(register_join_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
