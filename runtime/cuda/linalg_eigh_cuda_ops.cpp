// CUDA kernel of linalg_eigh: cuSOLVER's syevd (divide and conquer) per matrix. A dense row-major
// copy of A read as column-major is A^T, so the triangle cuSOLVER is told to read is the other one
// (UPLO "L" -> upper of A^T). syevd leaves the eigenvectors as columns of its column-major
// matrix, read back through swapped strides; eigenvalues (ascending) go straight to the output.
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/linalg_qr_eigh_svd_cuda.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

void linalg_eigh_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  DeviceGuard guard(input.device());
  const bool upper = call.attrs.get<bool>("upper");
  const bool compute_v = call.attrs.get<bool>("compute_v");
  const DType dtype = input.dtype();
  const int64_t n = input.sizes()[input.dim() - 1];
  const int64_t count = matrix_count(input);
  if (count == 0 || n == 0) return;
  void* stream = stream_of(input);
  const Tensor factored = packed_copy(input);  // syevd overwrites it with the eigenvectors
  const Tensor infos = info_buffer(count, input.device());
  const SolverHandle solver = solver_for(stream);
  const cudaDataType type = data_type_of(dtype);
  const cusolverEigMode_t job = compute_v ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  const cublasFillMode_t fill = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  Tensor& values = outputs[0];
  size_t device_bytes = 0, host_bytes = 0;
  cusolver_check(cusolver().Xsyevd_bufferSize(solver.handle, solver.params, job, fill, n, type, factored.raw_data_ptr(),
                                              n, type, values.raw_data_ptr(), type, &device_bytes, &host_bytes));
  const Tensor workspace = device_workspace(device_bytes, input.device());
  std::vector<char> host_workspace(host_bytes);
  const size_t element = dtype == DType::Float64 ? sizeof(double) : sizeof(float);
  for (int64_t index = 0; index < count; ++index) {
    char* matrix = static_cast<char*>(factored.raw_data_ptr()) + index * n * n * element;
    char* eigenvalues = static_cast<char*>(values.raw_data_ptr()) + index * n * element;
    cusolver_check(cusolver().Xsyevd(solver.handle, solver.params, job, fill, n, type, matrix, n, type, eigenvalues,
                                     type, workspace.raw_data_ptr(), device_bytes, host_workspace.data(), host_bytes,
                                     static_cast<int*>(infos.raw_data_ptr()) + index));
  }
  if (compute_v) {
    const MatrixBatch column_major{factored.raw_data_ptr(), n * n, 1, n};  // (i, j) at i + j n
    copy_matrices(dtype, row_major(outputs[1]), column_major, count, n, n, stream);
  }
  check_infos(infos, stream, "linalg.eigh");
}

void register_eigh_cuda_kernel(OpRegistry& registry) {
  registry.set_kernel("linalg_eigh", DeviceType::CUDA, linalg_eigh_cuda);
}

const OpRegistration registration(register_eigh_cuda_kernel);

}  // namespace
}  // namespace ember::cuda
