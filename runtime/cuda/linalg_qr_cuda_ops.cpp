// CUDA kernel of linalg_qr: cuSOLVER's geqrf (Householder QR, LAPACK's convention) on a
// column-major copy of each matrix, R read from its upper triangle, then orgqr forms Q from the
// reflectors in place. Column-major [m, n] is row-major [n, m], so the copy in is one transposing
// launch and Q and R are read back through swapped strides.
#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/linalg_qr_eigh_svd_cuda.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr int64_t kComplete = 1;
constexpr int64_t kROnly = 2;

// Q from the reflectors in `factored` (column-major, leading dimension m): orgqr's S and D forms.
void form_q(DType dtype, const SolverHandle& solver, int64_t m, int64_t q_cols, int64_t k, void* factored,
            const void* tau, Device device, int* info) {
  const auto rows = static_cast<int>(m), cols = static_cast<int>(q_cols), reflectors = static_cast<int>(k);
  int lwork = 0;
  if (dtype == DType::Float64) {
    cusolver_check(cusolver().Dorgqr_bufferSize(solver.handle, rows, cols, reflectors, static_cast<double*>(factored),
                                                rows, static_cast<const double*>(tau), &lwork));
    const Tensor work = device_workspace(static_cast<size_t>(lwork) * sizeof(double), device);
    cusolver_check(cusolver().Dorgqr(solver.handle, rows, cols, reflectors, static_cast<double*>(factored), rows,
                                     static_cast<const double*>(tau), static_cast<double*>(work.raw_data_ptr()), lwork,
                                     info));
  } else {
    cusolver_check(cusolver().Sorgqr_bufferSize(solver.handle, rows, cols, reflectors, static_cast<float*>(factored),
                                                rows, static_cast<const float*>(tau), &lwork));
    const Tensor work = device_workspace(static_cast<size_t>(lwork) * sizeof(float), device);
    cusolver_check(cusolver().Sorgqr(solver.handle, rows, cols, reflectors, static_cast<float*>(factored), rows,
                                     static_cast<const float*>(tau), static_cast<float*>(work.raw_data_ptr()), lwork,
                                     info));
  }
}

void linalg_qr_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const int64_t mode = call.attrs.get<int64_t>("mode");
  const DType dtype = input.dtype();
  const int64_t m = input.sizes()[input.dim() - 2], n = input.sizes()[input.dim() - 1], k = std::min(m, n);
  const int64_t count = matrix_count(input);
  void* stream = stream_of(input);
  Tensor& q = outputs[0];
  Tensor& r = outputs[1];
  const int64_t r_rows = r.sizes()[r.dim() - 2];
  fill_matrices(dtype, row_major(r), 0.0, count, r_rows, n, stream);
  const int64_t q_cols = mode == kROnly ? 0 : q.sizes()[q.dim() - 1];
  if (count == 0 || k == 0) {  // nothing to factor: R stays zero, a complete Q is the identity
    if (mode == kROnly || count == 0) return;
    fill_matrices(dtype, row_major(q), 0.0, count, m, q_cols, stream);
    const MatrixBatch diagonal{q.raw_data_ptr(), m * q_cols, q_cols + 1, 0};
    fill_matrices(dtype, diagonal, 1.0, count, std::min(m, q_cols), 1, stream);
    return;
  }
  // The factored matrices, column-major with leading dimension m: buffer [count, columns, m]. A
  // complete Q of a tall A needs m columns; the first n hold A.
  const int64_t columns = std::max(n, q_cols);
  const Tensor packed = contiguous_on_device(input);
  const Tensor factored = make_tensor({count, columns, m}, dtype, input.device());
  const MatrixBatch column_major{factored.raw_data_ptr(), columns * m, 1, m};  // element (i, j) at i + j m
  copy_matrices(dtype, column_major, row_major(packed), count, m, n, stream);
  const Tensor tau = make_tensor({count, k}, dtype, input.device());
  const Tensor infos = info_buffer(count, input.device());
  const SolverHandle solver = solver_for(stream);
  const cudaDataType type = data_type_of(dtype);
  size_t device_bytes = 0, host_bytes = 0;
  cusolver_check(cusolver().Xgeqrf_bufferSize(solver.handle, solver.params, m, n, type, factored.raw_data_ptr(), m,
                                              type, tau.raw_data_ptr(), type, &device_bytes, &host_bytes));
  const Tensor workspace = device_workspace(device_bytes, input.device());
  std::vector<char> host_workspace(host_bytes);
  const size_t element = dtype == DType::Float64 ? sizeof(double) : sizeof(float);
  for (int64_t index = 0; index < count; ++index) {
    char* matrix = static_cast<char*>(factored.raw_data_ptr()) + index * columns * m * element;
    char* reflectors = static_cast<char*>(tau.raw_data_ptr()) + index * k * element;
    int* info = static_cast<int*>(infos.raw_data_ptr()) + index;
    cusolver_check(cusolver().Xgeqrf(solver.handle, solver.params, m, n, type, matrix, m, type, reflectors, type,
                                     workspace.raw_data_ptr(), device_bytes, host_workspace.data(), host_bytes, info));
  }
  // R: row i keeps columns i..n-1 of the factored matrix's first min(r_rows, k) rows.
  for (int64_t i = 0; i < std::min(r_rows, k); ++i) {
    const MatrixBatch from{static_cast<char*>(factored.raw_data_ptr()) + (i + i * m) * element, columns * m, 1, m};
    const MatrixBatch to{static_cast<char*>(r.raw_data_ptr()) + (i * n + i) * element, r_rows * n, n, 1};
    copy_matrices(dtype, to, from, count, 1, n - i, stream);
  }
  if (mode != kROnly) {
    for (int64_t index = 0; index < count; ++index) {
      char* matrix = static_cast<char*>(factored.raw_data_ptr()) + index * columns * m * element;
      const char* reflectors = static_cast<const char*>(tau.raw_data_ptr()) + index * k * element;
      form_q(dtype, solver, m, q_cols, k, matrix, reflectors, input.device(),
             static_cast<int*>(infos.raw_data_ptr()) + index);
    }
    copy_matrices(dtype, row_major(q), column_major, count, m, q_cols, stream);
  }
  check_infos(infos, stream, "linalg.qr");
}

void register_qr_cuda_kernel(OpRegistry& registry) {
  registry.set_kernel("linalg_qr", DeviceType::CUDA, linalg_qr_cuda);
}

const OpRegistration registration(register_qr_cuda_kernel);

}  // namespace
}  // namespace ember::cuda
