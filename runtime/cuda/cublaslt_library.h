// cuBLASLt's entry points, loaded with dlopen on first use instead of linked into libember.
//
// Why: loading libcublasLt runs its static initializers, which fault in and clear tens of
// megabytes of tables, after the dynamic loader has relocated its ~500 MB image: 0.12 s before
// main() on the dev VM. Linked, every process paid it — each of the test suite's ~500 processes,
// every CPU-only run, ember-ckpt — whether or not it ever multiplied on a GPU. Loaded here, only
// the first cuBLASLt GEMM of a process does. tests/install/check_cuda_runtime.sh keeps it unlinked.
#pragma once

#include <cublasLt.h>

namespace ember::cuda {

// The functions ember calls, named as in cublasLt.h without the `cublasLt` prefix, so
// `cublaslt().Matmul(...)` reads like the API it calls.
struct CublasLt {
  decltype(&::cublasLtCreate) Create;
  decltype(&::cublasLtGetStatusString) GetStatusString;
  decltype(&::cublasLtMatmul) Matmul;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
};

// Loads libcublasLt on the first call (by soname through the usual search path, then from where
// the build found it) and resolves every function; throws ember::Error naming the library and
// the loader's reason when that fails. Thread-safe; later calls return the same table.
const CublasLt& cublaslt();

}  // namespace ember::cuda
