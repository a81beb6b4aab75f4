// Loading cuBLASLt at first use; see cublaslt_library.h for why it is not linked.
#include "runtime/cuda/cublaslt_library.h"

#include <dlfcn.h>

#include <string>

#include "runtime/error.h"

namespace ember::cuda {

namespace {

// Set by cmake/EmberCuda.cmake: the soname of the toolkit's major version, and the file the
// build linked against before (a fallback for machines whose loader path lacks the toolkit).
constexpr const char* kSoname = EMBER_CUBLASLT_SONAME;
constexpr const char* kBuildPath = EMBER_CUBLASLT_PATH;

void* open_library() {
  std::string reasons;
  for (const char* name : {kSoname, kBuildPath}) {
    // RTLD_LOCAL: nothing else in the process should bind to cuBLASLt's symbols by accident.
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
    reasons += fmt::format("\n  {}: {}", name, dlerror());
  }
  fail("cuBLASLt: cannot load the library, which CUDA matrix products need; tried:{}", reasons);
}

template <typename Function>
void resolve(void* handle, const char* name, Function& slot) {
  slot = reinterpret_cast<Function>(dlsym(handle, name));
  check(slot != nullptr, "cuBLASLt: the loaded library has no {} ({})", name, kSoname);
}

CublasLt load() {
  void* handle = open_library();  // never closed: the functions serve the process's life
  CublasLt library{};
  resolve(handle, "cublasLtCreate", library.Create);
  resolve(handle, "cublasLtGetStatusString", library.GetStatusString);
  resolve(handle, "cublasLtMatmul", library.Matmul);
  resolve(handle, "cublasLtMatmulAlgoGetHeuristic", library.MatmulAlgoGetHeuristic);
  resolve(handle, "cublasLtMatmulDescCreate", library.MatmulDescCreate);
  resolve(handle, "cublasLtMatmulDescDestroy", library.MatmulDescDestroy);
  resolve(handle, "cublasLtMatmulDescSetAttribute", library.MatmulDescSetAttribute);
  resolve(handle, "cublasLtMatmulPreferenceCreate", library.MatmulPreferenceCreate);
  resolve(handle, "cublasLtMatmulPreferenceDestroy", library.MatmulPreferenceDestroy);
  resolve(handle, "cublasLtMatmulPreferenceSetAttribute", library.MatmulPreferenceSetAttribute);
  resolve(handle, "cublasLtMatrixLayoutCreate", library.MatrixLayoutCreate);
  resolve(handle, "cublasLtMatrixLayoutDestroy", library.MatrixLayoutDestroy);
  resolve(handle, "cublasLtMatrixLayoutSetAttribute", library.MatrixLayoutSetAttribute);
  return library;
}

}  // namespace

const CublasLt& cublaslt() {
  static const CublasLt library = load();  // a throw leaves it unset, so the next call retries
  return library;
}

}  // namespace ember::cuda
