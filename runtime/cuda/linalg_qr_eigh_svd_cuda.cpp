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

Tensor info_buffer(int64_t count, Device device) { return make_tensor({count}, kInt32, device); }

void check_infos(const Tensor& infos, void* stream, const char* op) {
  const std::vector<int> host = read_infos(infos, infos.numel(), stream, op);
  for (size_t index = 0; index < host.size(); ++index) {
    internal_assert(host[index] >= 0, "cuSOLVER rejected an argument of a linear-algebra call");
    check(host[index] == 0,
          "{}: the algorithm failed to converge for matrix {} of the batch (cuSOLVER info {}): the input is "
          "ill-conditioned, has too many repeated values or holds inf / NaN",
          op, index, host[index]);
  }
}

}  // namespace ember::cuda
