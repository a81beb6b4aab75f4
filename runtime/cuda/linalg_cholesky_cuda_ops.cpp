// CUDA kernels of linalg_cholesky (cuSOLVER's 64-bit potrf, one call per matrix) and
// linalg_solve_triangular (kernels/cuda/linalg_triangular.h: cuSOLVER has no trsm, and cuBLAS's
// would need its own library load for one routine). A row-major matrix is its transpose in
// column-major order, so potrf of the upper triangle of the row-major buffer reads A's lower
// triangle and leaves L, row-major, in place; the untouched strict upper triangle is then zeroed.
#include "kernels/cuda/linalg_triangular.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/cusolver_library.h"
#include "runtime/cuda/linalg_solve_cuda_ops.h"
#include "runtime/linalg_solve_errors.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

void cholesky_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  DeviceGuard guard(a.device());
  void* stream = stream_of(a);
  const Tensor& l = outputs[0];
  copy_into(a, l);
  const int64_t count = matrix_count(a), n = a.size(-1);
  if (count == 0 || n == 0) return;
  const SolverHandle solver = solver_for(stream);
  const cudaDataType type = data_type_of(a.dtype());
  size_t device_bytes = 0, host_bytes = 0;
  cusolver_check(cusolver().Xpotrf_bufferSize(solver.handle, solver.params, CUBLAS_FILL_MODE_UPPER, n, type,
                                              l.raw_data_ptr(), n, type, &device_bytes, &host_bytes));
  const Tensor workspace = device_workspace(device_bytes, a.device());
  std::vector<char> host_workspace(host_bytes);
  const Tensor info = make_tensor({count}, kInt32, a.device());
  const int64_t matrix_bytes = n * n * static_cast<int64_t>(element_size(a.dtype()));
  for (int64_t m = 0; m < count; ++m)
    cusolver_check(cusolver().Xpotrf(solver.handle, solver.params, CUBLAS_FILL_MODE_UPPER, n, type,
                                     static_cast<char*>(l.raw_data_ptr()) + m * matrix_bytes, n, type,
                                     workspace.raw_data_ptr(), device_bytes, host_workspace.data(), host_bytes,
                                     info.data_ptr<int>() + m));
  launch_checked(launch_zero_strict_upper(a.dtype(), l.raw_data_ptr(), count, n, stream));
  const std::vector<int> infos = read_infos(info, count, stream, "linalg.cholesky");
  for (int64_t m = 0; m < count; ++m)
    if (infos[m] > 0) fail_not_positive_definite(a.dim() > 2, m, infos[m]);
}

void solve_triangular_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& b = call.input(1);
  DeviceGuard guard(b.device());
  const Tensor triangle = contiguous_on_device(call.input(0));
  copy_into(b, outputs[0]);
  launch_checked(launch_triangular_solve(b.dtype(), triangle.raw_data_ptr(), outputs[0].raw_data_ptr(), matrix_count(b),
                                         b.size(-2), b.size(-1), call.attrs.get<bool>("upper"),
                                         call.attrs.get<bool>("unitriangular"), stream_of(b)));
}

void register_linalg_cholesky_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("linalg_cholesky", DeviceType::CUDA, cholesky_cuda);
  registry.set_kernel("linalg_solve_triangular", DeviceType::CUDA, solve_triangular_cuda);
}

const OpRegistration registration(register_linalg_cholesky_cuda_kernels);

}  // namespace
}  // namespace ember::cuda
