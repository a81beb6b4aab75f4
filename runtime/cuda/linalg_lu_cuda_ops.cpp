// CUDA kernels of linalg_lu_factor, linalg_lu_solve, linalg_solve and linalg_slogdet through
// cuSOLVER's 64-bit getrf and getrs, one call per matrix of the batch on the op's stream (there is
// no batched 64-bit getrf; torch batches small matrices through cuBLAS's getrfBatched instead).
// cuSOLVER's pivots are int64; lu_factor returns them as torch's int32.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>

#include "kernels/cuda/linalg_det.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/cusolver_library.h"
#include "runtime/cuda/linalg_solve_cuda_ops.h"
#include "runtime/linalg_solve_errors.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor_alias.h"

namespace ember::cuda {

namespace {

// `t` with its last two dims swapped, sharing its memory (no dispatch: this runs inside kernels).
Tensor swapped_view(const Tensor& t) {
  auto impl = alias_impl(*t.impl(), /*is_view=*/true);
  std::swap(impl->sizes[t.dim() - 1], impl->sizes[t.dim() - 2]);
  std::swap(impl->strides[t.dim() - 1], impl->strides[t.dim() - 2]);
  return Tensor(std::move(impl));
}

// Matrix m of a dense batch of `elements`-element matrices.
void* matrix_at(const Tensor& t, int64_t m, int64_t elements) {
  return static_cast<char*>(t.raw_data_ptr()) + m * elements * static_cast<int64_t>(element_size(t.dtype()));
}

// A's getrf factors, column-major, with int64 pivots and one info per matrix.
struct Factors {
  Tensor lu;
  Tensor pivots;
  Tensor info;
  int64_t count = 0;
  int64_t n = 0;
};

Factors factor(const Tensor& a, void* stream) {
  Factors f{column_major_copy(a), Tensor(), Tensor(), matrix_count(a), a.size(-1)};
  Dims pivot_sizes;
  for (int d = 0; d + 1 < a.dim(); ++d) pivot_sizes.push_back(a.sizes()[d]);  // [*, n]
  f.pivots = make_tensor(pivot_sizes, kInt64, a.device());
  f.info = make_tensor({std::max<int64_t>(f.count, 1)}, kInt32, a.device());
  cuda_check(
      cudaMemsetAsync(f.info.raw_data_ptr(), 0, f.info.numel() * sizeof(int), static_cast<cudaStream_t>(stream)));
  if (f.count == 0 || f.n == 0) return f;
  const SolverHandle solver = solver_for(stream);
  const cudaDataType type = data_type_of(a.dtype());
  size_t device_bytes = 0, host_bytes = 0;
  cusolver_check(cusolver().Xgetrf_bufferSize(solver.handle, solver.params, f.n, f.n, type, f.lu.raw_data_ptr(), f.n,
                                              type, &device_bytes, &host_bytes));
  const Tensor workspace = device_workspace(device_bytes, a.device());
  std::vector<char> host_workspace(host_bytes);
  for (int64_t m = 0; m < f.count; ++m)
    cusolver_check(cusolver().Xgetrf(solver.handle, solver.params, f.n, f.n, type, matrix_at(f.lu, m, f.n * f.n), f.n,
                                     f.pivots.data_ptr<int64_t>() + m * f.n, type, workspace.raw_data_ptr(),
                                     device_bytes, host_workspace.data(), host_bytes, f.info.data_ptr<int>() + m));
  return f;
}

// Solves in place in the column-major right-hand sides `b` [*, k, n] from the factors.
void solve_with_factors(const Factors& f, const Tensor& b, bool adjoint, void* stream) {
  const int64_t k = b.size(-2);
  if (f.count == 0 || f.n == 0 || k == 0) return;
  const SolverHandle solver = solver_for(stream);
  const cudaDataType type = data_type_of(b.dtype());
  const cublasOperation_t operation = adjoint ? CUBLAS_OP_T : CUBLAS_OP_N;
  for (int64_t m = 0; m < f.count; ++m)
    cusolver_check(cusolver().Xgetrs(solver.handle, solver.params, operation, f.n, k, type,
                                     matrix_at(f.lu, m, f.n * f.n), f.n, f.pivots.data_ptr<int64_t>() + m * f.n, type,
                                     matrix_at(b, m, f.n * k), f.n, f.info.data_ptr<int>()));
}

void lu_factor_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  DeviceGuard guard(a.device());
  const Factors f = factor(a, stream_of(a));
  store_row_major(f.lu, outputs[0]);
  copy_into(f.pivots, outputs[1]);  // int64 -> torch's int32
}

void lu_solve_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& packed = call.input(0);
  DeviceGuard guard(packed.device());
  void* stream = stream_of(packed);
  Factors f{column_major_copy(packed), make_tensor(call.input(1).sizes(), kInt64, packed.device()),
            make_tensor({1}, kInt32, packed.device()), matrix_count(packed), packed.size(-1)};
  copy_into(call.input(1), f.pivots);  // torch's int32 -> cuSOLVER's int64 (valid pivots assumed)
  const Tensor b = column_major_copy(call.input(2));
  solve_with_factors(f, b, call.attrs.get<bool>("adjoint"), stream);
  store_row_major(b, outputs[0]);
}

void solve_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  DeviceGuard guard(a.device());
  void* stream = stream_of(a);
  const Factors f = factor(a, stream);
  const std::vector<int> infos = read_infos(f.info, f.count, stream, call.attrs.get<bool>("inverse") ? "linalg.inv" : "linalg.solve");
  for (int64_t m = 0; m < f.count; ++m)
    if (infos[m] > 0) fail_singular(call.attrs.get<bool>("inverse"), a.dim() > 2, m, infos[m]);
  const Tensor b = column_major_copy(call.input(1));
  solve_with_factors(f, b, false, stream);
  store_row_major(b, outputs[0]);
}

void slogdet_cuda(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  DeviceGuard guard(a.device());
  void* stream = stream_of(a);
  const Factors f = factor(a, stream);
  launch_checked(launch_slogdet_from_lu(a.dtype(), f.lu.raw_data_ptr(), f.pivots.data_ptr<int64_t>(),
                                        outputs[0].raw_data_ptr(), outputs[1].raw_data_ptr(), f.count, f.n, stream));
}

void register_linalg_lu_cuda_kernels(OpRegistry& registry) {
  registry.set_kernel("linalg_lu_factor", DeviceType::CUDA, lu_factor_cuda);
  registry.set_kernel("linalg_lu_solve", DeviceType::CUDA, lu_solve_cuda);
  registry.set_kernel("linalg_solve", DeviceType::CUDA, solve_cuda);
  registry.set_kernel("linalg_slogdet", DeviceType::CUDA, slogdet_cuda);
}

const OpRegistration registration(register_linalg_lu_cuda_kernels);

}  // namespace

Tensor column_major_copy(const Tensor& t) { return packed_copy(swapped_view(t)); }

void store_row_major(const Tensor& column_major, const Tensor& out) { copy_into(swapped_view(column_major), out); }

void copy_into(const Tensor& source, const Tensor& target) {
  if (target.numel() == 0) return;
  const LaunchShape shape = shape_of(target);
  launch_checked(launch_cast(target.dtype(), target.raw_data_ptr(), source.dtype(), operand_of(source, shape), shape));
}

}  // namespace ember::cuda
