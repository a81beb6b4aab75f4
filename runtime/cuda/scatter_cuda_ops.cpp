// CUDA kernels of the scatter-adds defined in runtime/ops/scatter_ops.cpp: embedding_backward,
// index_add and scatter_add. They accumulate with atomicAdd (see kernels/cuda/index.h), so float
// sums are not bit-reproducible between runs, unlike the CPU kernels, which add in index order.
// 16-bit dtypes accumulate in fp32 scratch and round once at the end (the CPU rounds after every
// addition; both are within the 16-bit tolerance). bool is not supported on CUDA.
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

bool is_half(DType dtype) { return dtype == kBFloat16 || dtype == kFloat16; }

// Where the additions land: `out` itself, or fp32 scratch of its shape for 16-bit dtypes. It starts
// as `initial` converted to its dtype, or as zeros when `initial` is undefined.
Tensor accumulator_for(const char* op, const Tensor& out, const Tensor& initial) {
  check(out.dtype() != kBool, "{}: bool tensors are not supported on CUDA", op);
  Tensor accumulator = is_half(out.dtype()) ? make_tensor(out.sizes(), kFloat32, out.device()) : out;
  if (accumulator.numel() == 0) return accumulator;
  if (!initial.defined()) {
    cuda_check(cudaMemsetAsync(accumulator.raw_data_ptr(), 0, accumulator.nbytes(),
                               static_cast<cudaStream_t>(stream_of(accumulator))));
    return accumulator;
  }
  const LaunchShape shape = shape_of(accumulator);
  launch_checked(launch_cast(accumulator.dtype(), accumulator.raw_data_ptr(), initial.dtype(),
                             operand_of(initial, shape), shape));
  return accumulator;
}

// Rounds fp32 scratch into the 16-bit output (nothing to do when the sums went to out directly).
void finish(const Tensor& accumulator, const Tensor& out) {
  if (accumulator.raw_data_ptr() == out.raw_data_ptr() || out.numel() == 0) return;
  const LaunchShape shape = shape_of(out);
  launch_checked(launch_cast(out.dtype(), out.raw_data_ptr(), accumulator.dtype(), operand_of(accumulator, shape),
                             shape));
}

void embedding_backward_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor grad = contiguous_on_device(call.input(0));
  const Tensor indices = dense_index(call.input(1), /*keep_int32=*/true);
  const Tensor accumulator = accumulator_for("embedding_backward", out, Tensor());
  IndexCheck index_check(out.device(), DeviceErrorOp::EmbeddingBackward);
  const AddSlices add{.accumulator = accumulator.raw_data_ptr(),
                      .accumulator_dtype = accumulator.dtype(),
                      .source = grad.raw_data_ptr(),
                      .source_dtype = grad.dtype(),
                      .indices = indices.raw_data_ptr(),
                      .indices_int64 = indices.dtype() == kInt64,
                      .outer = 1,
                      .target_size = out.size(0),
                      .count = indices.numel(),
                      .inner = out.size(1)};
  launch_checked(launch_add_slices(add, index_check.flag(), stream_of(out)));
  if (const auto bad = index_check.bad_index())
    fail("embedding_backward: index {} is out of range for num_weights {} (indices {})", bad->value, out.size(0),
         indices.sizes());
  finish(accumulator, out);
}

void index_add_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& self = call.input(0);
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const Tensor indices = dense_index(call.input(1), /*keep_int32=*/true);
  const Tensor source = contiguous_on_device(call.input(2));
  const int dim = dim_of(call, self.dim());
  const SplitDims split = split_dims(self.sizes(), dim);
  const Tensor accumulator = accumulator_for("index_add", out, self);
  IndexCheck index_check(out.device(), DeviceErrorOp::IndexAdd);
  // source is self's shape with dim resized to the index length: [outer, count, inner].
  const AddSlices add{.accumulator = accumulator.raw_data_ptr(),
                      .accumulator_dtype = accumulator.dtype(),
                      .source = source.raw_data_ptr(),
                      .source_dtype = source.dtype(),
                      .indices = indices.raw_data_ptr(),
                      .indices_int64 = indices.dtype() == kInt64,
                      .outer = split.outer,
                      .target_size = split.size,
                      .count = indices.numel(),
                      .inner = split.inner};
  launch_checked(launch_add_slices(add, index_check.flag(), stream_of(out)));
  if (const auto bad = index_check.bad_index())
    fail("index_add: index {} is out of range for dim {} of size {} (self {})", bad->value, dim, split.size,
         self.sizes());
  finish(accumulator, out);
}

void scatter_add_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& self = call.input(0);
  const Tensor& index = call.input(1);
  const Tensor& source = call.input(2);
  const Tensor& out = outputs[0];
  DeviceGuard guard(out.device());
  const int dim = dim_of(call, self.dim());
  const Tensor accumulator = accumulator_for("scatter_add", out, self);
  // index and src are read through their own strides; the accumulator is contiguous.
  IndexedWalk walk;
  walk.dims = dims_of(index);
  walk.numel = index.numel();
  walk.index = static_cast<const int64_t*>(index.raw_data_ptr());
  for (int d = 0; d < walk.dims; ++d) {
    walk.sizes[d] = index.size(d);
    walk.index_strides[d] = index.strides()[d];
    walk.indexed_strides[d] = d == dim ? 0 : accumulator.strides()[d];
    walk.plain_strides[d] = source.strides()[d];
  }
  walk.indexed_dim_stride = self.dim() == 0 ? 0 : accumulator.strides()[dim];
  walk.limit = self.dim() == 0 ? 1 : self.size(dim);
  IndexCheck index_check(out.device(), DeviceErrorOp::ScatterAdd);
  launch_checked(launch_scatter_add(accumulator.raw_data_ptr(), accumulator.dtype(), source.raw_data_ptr(),
                                    source.dtype(), walk, index_check.flag(), stream_of(out)));
  if (const auto bad = index_check.bad_index())
    fail("scatter_add: index {} is out of range for dim {} of size {} (input {}, index {})", bad->value, dim,
         walk.limit, self.sizes(), index.sizes());
  finish(accumulator, out);
}

void register_scatter_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("embedding_backward", kCuda, embedding_backward_cuda);
  registry.set_kernel("index_add", kCuda, index_add_cuda);
  registry.set_kernel("scatter_add", kCuda, scatter_add_cuda);
}

const OpRegistration registration(register_scatter_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
