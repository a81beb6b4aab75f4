// cuSOLVER's dense entry points, loaded with dlopen on first use instead of linked into libember
// (as cuBLASLt is, cublaslt_library.h): only a process that factors a matrix on a GPU pays for
// loading the library. The linear-algebra ops (LU, Cholesky, QR, eigh, SVD) call it through
// `cusolver()` and take a handle bound to their stream from `solver_for`.
#pragma once

#include <cusolverDn.h>

#include <source_location>

namespace ember::cuda {

// The functions ember calls, named as in cusolverDn.h without the `cusolverDn` prefix, so
// `cusolver().Xgetrf(...)` reads like the API it calls. The 64-bit "X" API takes the data type
// as an argument, so one entry serves float and double; orgqr has no X form.
struct Cusolver {
  decltype(&::cusolverDnCreate) Create;
  decltype(&::cusolverDnSetStream) SetStream;
  decltype(&::cusolverDnCreateParams) CreateParams;
  decltype(&::cusolverDnXgetrf_bufferSize) Xgetrf_bufferSize;
  decltype(&::cusolverDnXgetrf) Xgetrf;
  decltype(&::cusolverDnXgetrs) Xgetrs;
  decltype(&::cusolverDnXpotrf_bufferSize) Xpotrf_bufferSize;
  decltype(&::cusolverDnXpotrf) Xpotrf;
  decltype(&::cusolverDnXpotrs) Xpotrs;
  decltype(&::cusolverDnXgeqrf_bufferSize) Xgeqrf_bufferSize;
  decltype(&::cusolverDnXgeqrf) Xgeqrf;
  decltype(&::cusolverDnSorgqr_bufferSize) Sorgqr_bufferSize;
  decltype(&::cusolverDnSorgqr) Sorgqr;
  decltype(&::cusolverDnDorgqr_bufferSize) Dorgqr_bufferSize;
  decltype(&::cusolverDnDorgqr) Dorgqr;
  decltype(&::cusolverDnXsyevd_bufferSize) Xsyevd_bufferSize;
  decltype(&::cusolverDnXsyevd) Xsyevd;
  decltype(&::cusolverDnXgesvd_bufferSize) Xgesvd_bufferSize;
  decltype(&::cusolverDnXgesvd) Xgesvd;
};

// Loads libcusolver on the first call (by soname, then from where the build found it) and
// resolves every function; throws ember::Error naming the library and the loader's reason when
// that fails. Thread-safe; later calls return the same table.
const Cusolver& cusolver();

// What a solver call needs besides its data: this thread's handle for the current device, bound
// to `stream` (a cudaStream_t), and the handle's default 64-bit-API parameters.
struct SolverHandle {
  cusolverDnHandle_t handle = nullptr;
  cusolverDnParams_t params = nullptr;
  bool operator==(const SolverHandle&) const = default;  // ThreadHandlePool's "none" test
};
SolverHandle solver_for(void* stream);

// Throws ember::Error "cuSOLVER error at file:line: <status name>" unless status is SUCCESS.
void cusolver_check(cusolverStatus_t status, std::source_location where = std::source_location::current());

}  // namespace ember::cuda
