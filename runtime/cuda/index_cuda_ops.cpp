// CUDA kernels of the gathers defined in runtime/ops/index_ops.cpp: embedding, index_select,
// gather and one_hot. Shape rules have validated shapes and dtypes; index values are checked on
// the device (see index_cuda_common.h for when the check is reported).
#include <cuda_runtime_api.h>

#include "kernels/cuda/index.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/index_cuda_common.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

int dim_of(const OpCall& call, int rank) {
  return rank == 0 ? 0 : wrap_dim(call.attrs.get<int64_t>("dim"), rank, call.op.name);
}

void embedding_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor weight = contiguous_on_device(call.input(0));
  const Tensor indices = dense_index(call.input(1), /*keep_int32=*/true);
  IndexCheck index_check(out.device(), DeviceErrorOp::Embedding);
  const SelectRows select{.out = out.raw_data_ptr(),
                          .source = weight.raw_data_ptr(),
                          .indices = indices.raw_data_ptr(),
                          .indices_int64 = indices.dtype() == kInt64,
                          .outer = 1,
                          .source_size = weight.size(0),
                          .count = indices.numel(),
                          .row_bytes = weight.size(1) * static_cast<int64_t>(weight.element_size())};
  launch_checked(launch_select_rows(select, index_check.flag(), stream_of(out)));
  if (const auto bad = index_check.bad_index())
    fail("embedding: index {} is out of range for a weight with {} rows (weight {}, indices {})", bad->value,
         weight.size(0), weight.sizes(), call.input(1).sizes());
}

void index_select_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor a = contiguous_on_device(call.input(0));
  const Tensor indices = dense_index(call.input(1), /*keep_int32=*/true);
  const int dim = dim_of(call, a.dim());
  const SplitDims split = split_dims(a.sizes(), dim);
  IndexCheck index_check(out.device(), DeviceErrorOp::IndexSelect);
  const SelectRows select{.out = out.raw_data_ptr(),
                          .source = a.raw_data_ptr(),
                          .indices = indices.raw_data_ptr(),
                          .indices_int64 = indices.dtype() == kInt64,
                          .outer = split.outer,
                          .source_size = split.size,
                          .count = indices.numel(),
                          .row_bytes = split.inner * static_cast<int64_t>(a.element_size())};
  launch_checked(launch_select_rows(select, index_check.flag(), stream_of(out)));
  if (const auto bad = index_check.bad_index())
    fail("index_select: index {} is out of range for dim {} of size {} (input {})", bad->value, dim, split.size,
         a.sizes());
}

void gather_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& index = call.input(1);
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const int dim = dim_of(call, a.dim());
  // a and index are read through their own strides; out has index's shape and is contiguous.
  IndexedWalk walk;
  walk.dims = dims_of(index);
  walk.numel = index.numel();
  walk.index = static_cast<const int64_t*>(index.raw_data_ptr());
  for (int d = 0; d < walk.dims; ++d) {
    walk.sizes[d] = index.size(d);
    walk.index_strides[d] = index.strides()[d];
    walk.indexed_strides[d] = d == dim ? 0 : a.strides()[d];
  }
  walk.indexed_dim_stride = a.dim() == 0 ? 0 : a.strides()[dim];
  walk.limit = a.dim() == 0 ? 1 : a.size(dim);
  IndexCheck index_check(out.device(), DeviceErrorOp::Gather);
  launch_checked(launch_gather(out.raw_data_ptr(), a.raw_data_ptr(), static_cast<int>(a.element_size()), walk,
                               index_check.flag(), stream_of(out)));
  if (const auto bad = index_check.bad_index())
    fail("gather: index {} is out of range for dim {} of size {} (input {}, index {})", bad->value, dim, walk.limit,
         a.sizes(), index.sizes());
}

void one_hot_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor indices = dense_index(call.input(0), /*keep_int32=*/false);
  const int64_t classes = out.size(-1);
  if (out.nbytes() > 0)
    cuda_check(cudaMemsetAsync(out.raw_data_ptr(), 0, out.nbytes(), static_cast<cudaStream_t>(stream_of(out))));
  IndexCheck index_check(out.device(), DeviceErrorOp::OneHot);
  launch_checked(launch_one_hot(static_cast<int64_t*>(out.raw_data_ptr()),
                                static_cast<const int64_t*>(indices.raw_data_ptr()), indices.numel(), classes,
                                index_check.flag(), stream_of(out)));
  if (const auto bad = index_check.bad_index())
    fail("one_hot: class index {} is out of range for {} classes (index {})", bad->value, classes, indices.sizes());
}

void register_index_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("embedding", kCuda, embedding_cuda);
  registry.set_kernel("index_select", kCuda, index_select_cuda);
  registry.set_kernel("gather", kCuda, gather_cuda);
  registry.set_kernel("one_hot", kCuda, one_hot_cuda);
}

const OpRegistration registration(register_index_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
