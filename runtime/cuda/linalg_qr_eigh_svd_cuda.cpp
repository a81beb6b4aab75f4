// Layout, workspace and info helpers of the cuSOLVER decomposition kernels; see
// linalg_qr_eigh_svd_cuda.h.
#include "runtime/cuda/linalg_qr_eigh_svd_cuda.h"

#include <cuda_runtime_api.h>

#include "kernels/cuda/elementwise.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/error.h"

namespace ember::cuda {

namespace {

LaunchShape shape_3d(int64_t count, int64_t rows, int64_t cols, void* stream) {
  LaunchShape shape;
  shape.dims = 3;
  shape.sizes[0] = count;
  shape.sizes[1] = rows;
  shape.sizes[2] = cols;
  shape.numel = count * rows * cols;
  shape.stream = stream;
  return shape;
}

}  // namespace

void copy_matrices(DType dtype, const MatrixBatch& to, const MatrixBatch& from, int64_t count, int64_t rows,
                   int64_t cols, void* stream) {
  if (count * rows * cols == 0) return;
  const LaunchShape shape = shape_3d(count, rows, cols, stream);
  OutputOperand out;
  out.data = to.data;
  out.strides[0] = to.batch, out.strides[1] = to.row, out.strides[2] = to.column;
  out.contiguous = false;
  StridedOperand in;
  in.data = from.data;
  in.strides[0] = from.batch, in.strides[1] = from.row, in.strides[2] = from.column;
  in.contiguous = false;
  launch_checked(launch_convert(dtype, out, dtype, in, shape));
}

void fill_matrices(DType dtype, const MatrixBatch& to, double value, int64_t count, int64_t rows, int64_t cols,
                   void* stream) {
  if (count * rows * cols == 0) return;
  const LaunchShape shape = shape_3d(count, rows, cols, stream);
  OutputOperand out;
  out.data = to.data;
  out.strides[0] = to.batch, out.strides[1] = to.row, out.strides[2] = to.column;
  out.contiguous = false;
  launch_checked(launch_fill_strided(dtype, out, value, shape));
}

MatrixBatch row_major(const Tensor& dense) {
  internal_assert(dense.is_contiguous(), "linalg cuSOLVER kernels expect dense outputs");
  const int64_t rows = dense.sizes()[dense.dim() - 2], cols = dense.sizes()[dense.dim() - 1];
  return {dense.raw_data_ptr(), rows * cols, cols, 1};
}

int64_t matrix_count(const Tensor& tensor) {
  int64_t count = 1;
  for (int d = 0; d < tensor.dim() - 2; ++d) count *= tensor.sizes()[d];
  return count;
}

cudaDataType solver_type(DType dtype) { return dtype == DType::Float64 ? CUDA_R_64F : CUDA_R_32F; }

Tensor device_workspace(size_t bytes, Device device) {
  return make_tensor({static_cast<int64_t>(bytes / 8 + 1)}, kInt64, device);
}

Tensor info_buffer(int64_t count, Device device) { return make_tensor({count}, kInt32, device); }

void check_infos(const Tensor& infos, void* stream, const char* op) {
  std::vector<int> host(static_cast<size_t>(infos.numel()));
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  cuda_check(cudaMemcpyAsync(host.data(), infos.raw_data_ptr(), host.size() * sizeof(int), cudaMemcpyDeviceToHost,
                             cuda_stream));
  cuda_check(cudaStreamSynchronize(cuda_stream));
  for (size_t index = 0; index < host.size(); ++index) {
    internal_assert(host[index] >= 0, "cuSOLVER rejected an argument of a linear-algebra call");
    check(host[index] == 0,
          "{}: the algorithm failed to converge for matrix {} of the batch (cuSOLVER info {}): the input is "
          "ill-conditioned, has too many repeated values or holds inf / NaN",
          op, index, host[index]);
  }
}

}  // namespace ember::cuda
