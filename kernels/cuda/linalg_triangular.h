// Host entry points of the solve family's own CUDA kernels (linalg_triangular.cu): the triangular
// solve cuSOLVER lacks, and the cleanup of the triangle potrf leaves untouched. Plain C++: the op
// files (runtime/cuda/linalg_*_cuda_ops.cpp) pass dense row-major batches and raw pointers.
#pragma once

#include <cstdint>

namespace ember {
enum class DType : uint8_t;
}  // namespace ember

namespace ember::cuda {

// Solves T X = B in place in x for `count` matrices: T dense row-major [count, n, n] (one triangle
// read, the diagonal taken as 1 when unit), x dense row-major [count, n, k]. One thread per
// (matrix, column of B) runs the forward (lower) or back (upper) substitution: simple and exact in
// its operation order, fast enough for the small and medium matrices the autograd rules solve.
// Returns the launch's cudaError_t.
int launch_triangular_solve(DType dtype, const void* triangle, void* x, int64_t count, int64_t n, int64_t k, bool upper,
                            bool unit, void* stream);

// Sets the strict upper triangle of `count` dense row-major n x n matrices to zero.
int launch_zero_strict_upper(DType dtype, void* matrices, int64_t count, int64_t n, void* stream);

}  // namespace ember::cuda
