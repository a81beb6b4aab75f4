// OpenBLAS, opened on first use instead of linked, so that ember chooses its CPU kernels.
//
// Debian's OpenBLAS is a DYNAMIC_ARCH build: when the library is loaded it picks a kernel set
// ("core") for the CPU it finds, or, for a CPU model it does not know, falls back to the SSE3
// "Prescott" core. 0.3.21 does not know Emerald Rapids (family 6, model 0xCF), so on our CI
// machines the big products ran SSE3 code at a quarter of the AVX-512 kernels' speed (wide MLP
// step 140 ms vs 38 ms; docs/PERFORMANCE.md). The core is chosen by the library's constructor, so
// it can only be steered before the library is loaded: ember opens it itself, and sets
// OPENBLAS_CORETYPE for that load when the user has not set it and the CPU has the AVX-512 subsets
// OpenBLAS's SkylakeX kernels use. Other CPUs keep OpenBLAS's own detection.
#pragma once

#include <string>

namespace ember::cpu {

// The functions ember calls, with cblas.h's signatures (enums passed as int).
struct OpenBlasFunctions {
  void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc);
  void (*dgemm)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a, int lda,
                const double* b, int ldb, double beta, double* c, int ldc);
  int (*get_parallel)();
  void (*set_num_threads)(int threads);
  char* (*get_corename)();
};

// OpenBLAS's functions, or nullptr when this libember was built without it, the library did not
// load, or it is not the OpenMP build; openblas_unavailable_reason() says which. Loaded once,
// from EMBER_OPENBLAS_LIBRARY (a path or soname) when that is set, else from the build's find.
const OpenBlasFunctions* openblas_functions();
std::string openblas_unavailable_reason();

// The kernel set OpenBLAS runs ("SkylakeX", "Haswell", "Prescott", ...); empty when not loaded.
std::string openblas_core();

// The OPENBLAS_CORETYPE ember asks for when the user set none: "Cooperlake" (SkylakeX's kernels
// plus bf16 ones) or "SkylakeX" on a CPU with AVX-512 F, CD, BW, DQ and VL, else nullptr.
const char* openblas_core_for_this_cpu();

}  // namespace ember::cpu
