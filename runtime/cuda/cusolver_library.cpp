// Loading cuSOLVER at first use, and one handle per thread and device; see cusolver_library.h.
#include "runtime/cuda/cusolver_library.h"

#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/thread_handle_pool.h"
#include "runtime/error.h"
#include "runtime/shared_library.h"

namespace ember::cuda {

namespace {

// Set by cmake/EmberCuda.cmake: the soname of the toolkit's library, and the file the build found
// (for a machine whose loader path lacks the toolkit).
constexpr const char* kSoname = EMBER_CUSOLVER_SONAME;

Cusolver load() {
  void* handle = open_shared_library({kSoname, EMBER_CUSOLVER_PATH}, "cuSOLVER, which CUDA linear algebra needs");
  Cusolver s{};
  resolve_function(handle, "cusolverDnCreate", kSoname, s.Create);
  resolve_function(handle, "cusolverDnSetStream", kSoname, s.SetStream);
  resolve_function(handle, "cusolverDnCreateParams", kSoname, s.CreateParams);
  resolve_function(handle, "cusolverDnXgetrf_bufferSize", kSoname, s.Xgetrf_bufferSize);
  resolve_function(handle, "cusolverDnXgetrf", kSoname, s.Xgetrf);
  resolve_function(handle, "cusolverDnXgetrs", kSoname, s.Xgetrs);
  resolve_function(handle, "cusolverDnXpotrf_bufferSize", kSoname, s.Xpotrf_bufferSize);
  resolve_function(handle, "cusolverDnXpotrf", kSoname, s.Xpotrf);
  resolve_function(handle, "cusolverDnXpotrs", kSoname, s.Xpotrs);
  resolve_function(handle, "cusolverDnXgeqrf_bufferSize", kSoname, s.Xgeqrf_bufferSize);
  resolve_function(handle, "cusolverDnXgeqrf", kSoname, s.Xgeqrf);
  resolve_function(handle, "cusolverDnSorgqr_bufferSize", kSoname, s.Sorgqr_bufferSize);
  resolve_function(handle, "cusolverDnSorgqr", kSoname, s.Sorgqr);
  resolve_function(handle, "cusolverDnDorgqr_bufferSize", kSoname, s.Dorgqr_bufferSize);
  resolve_function(handle, "cusolverDnDorgqr", kSoname, s.Dorgqr);
  resolve_function(handle, "cusolverDnXsyevd_bufferSize", kSoname, s.Xsyevd_bufferSize);
  resolve_function(handle, "cusolverDnXsyevd", kSoname, s.Xsyevd);
  resolve_function(handle, "cusolverDnXgesvd_bufferSize", kSoname, s.Xgesvd_bufferSize);
  resolve_function(handle, "cusolverDnXgesvd", kSoname, s.Xgesvd);
  return s;
}

SolverHandle create_handle(int device) {
  DeviceGuard guard(Device(DeviceType::CUDA, device));
  SolverHandle solver;
  cusolver_check(cusolver().Create(&solver.handle));
  cusolver_check(cusolver().CreateParams(&solver.params));
  return solver;
}

// cuSOLVER has no status-to-string function; these are the names cusolver_common.h gives.
const char* status_name(cusolverStatus_t status) {
  switch (status) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    default: return "an unnamed cuSOLVER status";
  }
}

}  // namespace

const Cusolver& cusolver() {
  static const Cusolver library = load();  // a throw leaves it unset, so the next call retries
  return library;
}

SolverHandle solver_for(void* stream) {
  int device = 0;
  cuda_check(cudaGetDevice(&device));
  // Per thread as well as per device, so a handle is never used by two threads at once.
  const SolverHandle solver = ThreadHandlePool<SolverHandle>::of(create_handle).for_this_thread(device);
  cusolver_check(cusolver().SetStream(solver.handle, static_cast<cudaStream_t>(stream)));
  return solver;
}

void cusolver_check(cusolverStatus_t status, std::source_location where) {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  fail("cuSOLVER error at {}:{}: {} ({})", where.file_name(), where.line(), status_name(status),
       static_cast<int>(status));
}

}  // namespace ember::cuda
