// The product of one GEMM tile on one thread, C = A B or C += A B, by the library that multiplies
// big matrices: OpenBLAS (its OpenMP build) when libember is built with it, else Eigen. gemm.cpp
// does the tiling, the threads, the bias and the epilogue around it; small products never come
// here (small_gemm.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/cpu/small_gemm.h"

namespace ember::cpu {

enum class GemmLibrary { Eigen, OpenBlas };

// Whether this libember was built with OpenBLAS and the loaded library is its OpenMP build.
bool openblas_available();

// The library tile_product uses: OpenBLAS when available, unless the environment says
// EMBER_CPU_GEMM=eigen (for A/B runs of the same binary). Read once.
GemmLibrary gemm_library();

// Switches the library for the rest of the process (tests run every product through both).
// Asking for OpenBLAS where it is not available is an error that says why.
void set_gemm_library(GemmLibrary library);

std::string_view gemm_library_name(GemmLibrary library);

// The library in use as benchmarks report it: "Eigen", or "OpenBLAS SkylakeX" (with the kernel
// set OpenBLAS runs, which decides its speed; openblas_library.h).
std::string gemm_library_description();

// C[rows, cols] (rows `c_row_stride` apart, columns contiguous) = A B, plus C's old values when
// `accumulate`. A is rows x k and B is k x cols; each must be gemm_mappable (one stride 1, the
// other not overlapping). Single-threaded, and for a given shape and library the summation order
// is fixed, so results never depend on the thread that runs the tile.
template <typename T>
void tile_product(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t rows, int64_t cols,
                  int64_t k, bool accumulate);

extern template void tile_product<float>(StridedMatrix<float>, StridedMatrix<float>, float*, int64_t, int64_t,
                                         int64_t, int64_t, bool);
extern template void tile_product<double>(StridedMatrix<double>, StridedMatrix<double>, double*, int64_t, int64_t,
                                          int64_t, int64_t, bool);

}  // namespace ember::cpu
