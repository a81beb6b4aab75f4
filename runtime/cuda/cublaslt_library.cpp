// Loading cuBLASLt at first use; see cublaslt_library.h for why it is not linked.
#include "runtime/cuda/cublaslt_library.h"

#include "runtime/shared_library.h"

namespace ember::cuda {

namespace {

// Set by cmake/EmberCuda.cmake: the soname of the toolkit's major version, and the file the
// build found (for a machine whose loader path lacks the toolkit).
constexpr const char* kSoname = EMBER_CUBLASLT_SONAME;

CublasLt load() {
  void* handle = open_shared_library({kSoname, EMBER_CUBLASLT_PATH}, "cuBLASLt, which CUDA matrix products need");
  CublasLt lt{};
  resolve_function(handle, "cublasLtCreate", kSoname, lt.Create);
  resolve_function(handle, "cublasLtGetStatusString", kSoname, lt.GetStatusString);
  resolve_function(handle, "cublasLtMatmul", kSoname, lt.Matmul);
  resolve_function(handle, "cublasLtMatmulAlgoGetHeuristic", kSoname, lt.MatmulAlgoGetHeuristic);
  resolve_function(handle, "cublasLtMatmulDescCreate", kSoname, lt.MatmulDescCreate);
  resolve_function(handle, "cublasLtMatmulDescDestroy", kSoname, lt.MatmulDescDestroy);
  resolve_function(handle, "cublasLtMatmulDescSetAttribute", kSoname, lt.MatmulDescSetAttribute);
  resolve_function(handle, "cublasLtMatmulPreferenceCreate", kSoname, lt.MatmulPreferenceCreate);
  resolve_function(handle, "cublasLtMatmulPreferenceDestroy", kSoname, lt.MatmulPreferenceDestroy);
  resolve_function(handle, "cublasLtMatmulPreferenceSetAttribute", kSoname, lt.MatmulPreferenceSetAttribute);
  resolve_function(handle, "cublasLtMatrixLayoutCreate", kSoname, lt.MatrixLayoutCreate);
  resolve_function(handle, "cublasLtMatrixLayoutDestroy", kSoname, lt.MatrixLayoutDestroy);
  resolve_function(handle, "cublasLtMatrixLayoutSetAttribute", kSoname, lt.MatrixLayoutSetAttribute);
  return lt;
}

}  // namespace

const CublasLt& cublaslt() {
  static const CublasLt library = load();  // a throw leaves it unset, so the next call retries
  return library;
}

}  // namespace ember::cuda
