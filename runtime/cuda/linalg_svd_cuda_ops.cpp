// CUDA kernel of linalg_svd: cuSOLVER's gesvd per matrix. gesvd needs rows >= columns of its
// column-major input. A wide or square A (m <= n) as a dense row-major copy already is the
// column-major X = A^T with n >= m rows; X = Ux S VTx gives A = VTx^T S Ux^T, and read as row-major,
// VTx (column-major m x m) is U and Ux (column-major n x *) is Vh, so gesvd writes the outputs
// directly. A tall A is copied column-major instead and its U and VT are read back transposed.
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/linalg_qr_eigh_svd_cuda.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

// One gesvd call per matrix of a column-major batch [count] of rows x cols (rows >= cols).
struct GesvdBatch {
  signed char job_u = 'N', job_vt = 'N';
  int64_t rows = 0, cols = 0;
  void* a = nullptr;  // leading dimension rows
  void* s = nullptr;
  void* u = nullptr;   // leading dimension rows, u_cols columns
  void* vt = nullptr;  // leading dimension cols
  int64_t u_cols = 0;
};

void run_gesvd(DType dtype, const GesvdBatch& batch, int64_t count, Device device, const Tensor& infos, void* stream) {
  const SolverHandle solver = solver_for(stream);
  const cudaDataType type = data_type_of(dtype);
  const size_t element = dtype == DType::Float64 ? sizeof(double) : sizeof(float);
  const int64_t k = batch.cols;
  size_t device_bytes = 0, host_bytes = 0;
  cusolver_check(cusolver().Xgesvd_bufferSize(
      solver.handle, solver.params, batch.job_u, batch.job_vt, batch.rows, batch.cols, type, batch.a, batch.rows, type,
      batch.s, type, batch.u, batch.rows, type, batch.vt, batch.cols, type, &device_bytes, &host_bytes));
  const Tensor workspace = device_workspace(device_bytes, device);
  std::vector<char> host_workspace(host_bytes);
  auto at = [element](void* base, int64_t index, int64_t size) {
    return base == nullptr ? nullptr : static_cast<char*>(base) + index * size * static_cast<int64_t>(element);
  };
  for (int64_t index = 0; index < count; ++index) {
    cusolver_check(cusolver().Xgesvd(solver.handle, solver.params, batch.job_u, batch.job_vt, batch.rows, batch.cols,
                                     type, at(batch.a, index, batch.rows * batch.cols), batch.rows, type,
                                     at(batch.s, index, k), type, at(batch.u, index, batch.rows * batch.u_cols),
                                     batch.rows, type, at(batch.vt, index, batch.cols * batch.cols), batch.cols, type,
                                     workspace.raw_data_ptr(), device_bytes, host_workspace.data(), host_bytes,
                                     static_cast<int*>(infos.raw_data_ptr()) + index));
  }
}

void linalg_svd_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const bool full = call.attrs.get<bool>("full_matrices");
  const bool compute_uv = call.attrs.get<bool>("compute_uv");
  const DType dtype = input.dtype();
  const int64_t m = input.sizes()[input.dim() - 2], n = input.sizes()[input.dim() - 1], k = std::min(m, n);
  const int64_t count = matrix_count(input);
  void* stream = stream_of(input);
  Tensor& u = outputs[0];
  Tensor& vh = outputs[2];
  if (count == 0) return;
  if (k == 0) {  // no singular values; the full bases are identities
    if (!compute_uv) return;
    for (Tensor* basis : {&u, &vh}) {
      const int64_t side = basis->sizes()[basis->dim() - 1];
      fill_matrices(dtype, row_major(*basis), 0.0, count, basis->sizes()[basis->dim() - 2], side, stream);
      fill_matrices(dtype, {basis->raw_data_ptr(), basis->numel() / count, side + 1, 0}, 1.0, count,
                    std::min(side, basis->sizes()[basis->dim() - 2]), 1, stream);
    }
    return;
  }
  const signed char job = !compute_uv ? 'N' : full ? 'A' : 'S';
  const Tensor infos = info_buffer(count, input.device());
  GesvdBatch batch;
  batch.s = outputs[1].raw_data_ptr();
  if (m <= n) {
    const Tensor x = packed_copy(input);  // column-major A^T: n x m; gesvd overwrites it
    batch.rows = n, batch.cols = m, batch.a = x.raw_data_ptr();
    batch.job_u = job, batch.job_vt = compute_uv ? 'A' : 'N';
    batch.u = compute_uv ? vh.raw_data_ptr() : nullptr, batch.u_cols = full ? n : m;
    batch.vt = compute_uv ? u.raw_data_ptr() : nullptr;
    run_gesvd(dtype, batch, count, input.device(), infos, stream);
    check_infos(infos, stream, "linalg.svd");
    return;
  }
  const Tensor packed = contiguous_on_device(input);
  const Tensor a = make_tensor({count, n, m}, dtype, input.device());  // column-major A: m x n
  const MatrixBatch a_columns{a.raw_data_ptr(), m * n, 1, m};
  copy_matrices(dtype, a_columns, row_major(packed), count, m, n, stream);
  const int64_t u_cols = full ? m : n;
  const Tensor u_columns = compute_uv ? make_tensor({count, u_cols, m}, dtype, input.device()) : Tensor();
  const Tensor vt_columns = compute_uv ? make_tensor({count, n, n}, dtype, input.device()) : Tensor();
  batch.rows = m, batch.cols = n, batch.a = a.raw_data_ptr();
  batch.job_u = job, batch.job_vt = compute_uv ? 'A' : 'N';
  batch.u = compute_uv ? u_columns.raw_data_ptr() : nullptr, batch.u_cols = u_cols;
  batch.vt = compute_uv ? vt_columns.raw_data_ptr() : nullptr;
  run_gesvd(dtype, batch, count, input.device(), infos, stream);
  if (compute_uv) {
    copy_matrices(dtype, row_major(u), {u_columns.raw_data_ptr(), u_cols * m, 1, m}, count, m, u_cols, stream);
    copy_matrices(dtype, row_major(vh), {vt_columns.raw_data_ptr(), n * n, 1, n}, count, n, n, stream);
  }
  check_infos(infos, stream, "linalg.svd");
}

void register_svd_cuda_kernel(OpRegistry& registry) {
  registry.set_kernel("linalg_svd", DeviceType::CUDA, linalg_svd_cuda);
}

const OpRegistration registration(register_svd_cuda_kernel);

}  // namespace
}  // namespace ember::cuda
