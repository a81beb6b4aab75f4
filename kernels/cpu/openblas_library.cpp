// Opening OpenBLAS with the kernel set chosen for this CPU; see openblas_library.h.
#include "kernels/cpu/openblas_library.h"

#include <cstdlib>
#include <optional>

#include "runtime/error.h"
#include "runtime/shared_library.h"

namespace ember::cpu {

namespace {

struct LoadResult {
  std::optional<OpenBlasFunctions> functions;
  std::string unavailable_reason;
};

#ifdef EMBER_HAS_OPENBLAS
// Sets OPENBLAS_CORETYPE for the library's load and removes it again, so that programs ember
// starts later (the host compiler, mpirun) see the environment the user gave. A variable the
// user set is left alone: it is how to force another core. setenv is not safe against another
// thread's getenv at the same moment; this runs once, at the process's first big CPU product.
class CoreTypeForLoad {
 public:
  CoreTypeForLoad() {
    const char* core = openblas_core_for_this_cpu();
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr || core == nullptr) return;
    set_ = setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0) == 0;
  }
  ~CoreTypeForLoad() {
    if (set_) unsetenv("OPENBLAS_CORETYPE");
  }
  CoreTypeForLoad(const CoreTypeForLoad&) = delete;
  CoreTypeForLoad& operator=(const CoreTypeForLoad&) = delete;

 private:
  bool set_ = false;
};

// openblas_get_parallel(): 0 serial build, 1 pthreads, 2 OpenMP. Only the OpenMP build shares
// our OpenMP runtime; the serial one gives other bits inside an OpenMP region than outside.
LoadResult load() {
  LoadResult result;
  try {
    const CoreTypeForLoad core_type;
    void* library = nullptr;
    constexpr const char* kWhat = "OpenBLAS (OpenMP build)";
    if (const char* chosen = std::getenv("EMBER_OPENBLAS_LIBRARY")) {
      library = open_shared_library({chosen}, kWhat);
    } else {
      // The OpenMP build CMake found first; the soname's default search may find another build,
      // which the check below turns away.
      library = open_shared_library({EMBER_OPENBLAS_PATH, "libopenblas.so.0"}, kWhat);
    }
    OpenBlasFunctions functions{};
    resolve_function(library, "cblas_sgemm", "OpenBLAS", functions.sgemm);
    resolve_function(library, "cblas_dgemm", "OpenBLAS", functions.dgemm);
    resolve_function(library, "openblas_get_parallel", "OpenBLAS", functions.get_parallel);
    resolve_function(library, "openblas_set_num_threads", "OpenBLAS", functions.set_num_threads);
    resolve_function(library, "openblas_get_corename", "OpenBLAS", functions.get_corename);
    result.functions = functions;
  } catch (const Error& error) {
    result.unavailable_reason = error.what();
    return result;
  }
  if (result.functions->get_parallel() != 2) {
    result.unavailable_reason = "the loaded libopenblas is not its OpenMP build";
    result.functions.reset();
  }
  return result;
}
#else
LoadResult load() {
  return {std::nullopt,
          "this libember was built without it: EMBER_WITH_OPENBLAS=OFF or libopenblas-openmp-dev not installed"};
}
#endif

const LoadResult& loaded() {
  static const LoadResult result = load();
  return result;
}

}  // namespace

const char* openblas_core_for_this_cpu() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  if (!avx512) return nullptr;
  return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
#else
  return nullptr;
#endif
}

const OpenBlasFunctions* openblas_functions() {
  const LoadResult& result = loaded();
  return result.functions ? &*result.functions : nullptr;
}

std::string openblas_unavailable_reason() { return loaded().unavailable_reason; }

std::string openblas_core() {
  const OpenBlasFunctions* functions = openblas_functions();
  return functions != nullptr ? functions->get_corename() : "";
}

}  // namespace ember::cpu
