// Strided, batched matrix multiplication on the CPU: C[b] = A[b] B[b] (+ a bias row added to
// every row of C), for float and double, through Eigen or, for small products, the
// register-blocked small_gemm. Operands are read in place: a matrix whose column stride is 1 is
// mapped row-major, one whose row stride is 1 column-major, so transposed views cost nothing.
// The op kernels (gemm_kernels.cpp) handle shapes, dtypes and the rare copy.
#pragma once

#include <cstdint>

#include "kernels/gemm_activation.h"
#include "runtime/dims.h"

namespace ember::cpu {

struct GemmShape {
  int64_t m = 0;  // rows of A and C
  int64_t n = 0;  // columns of B and C
  int64_t k = 0;  // columns of A, rows of B
  // Broadcast batch dims; C is contiguous [batch..., m, n]. Strides are in elements, 0 where an
  // operand is broadcast along a batch dim.
  Dims batch_sizes;
  Dims a_batch_strides;
  Dims b_batch_strides;
  int64_t a_row_stride = 0;
  int64_t a_col_stride = 0;
  int64_t b_row_stride = 0;
  int64_t b_col_stride = 0;
};

// Where batch `batch` (a flat index over batch_sizes, row-major) of A and of B starts, in elements.
struct BatchOffsets {
  int64_t a = 0;
  int64_t b = 0;
};
BatchOffsets batch_offsets(const GemmShape& shape, int64_t batch);

// Whether a rows x cols matrix with these strides maps onto Eigen without a copy: one of its
// strides must be 1 (a size-1 dim's stride never matters) and the other must not overlap rows.
bool gemm_mappable(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

// The tiles a big rows x cols product is cut into: the largest (at most 512 x 512) that give each
// of `cores` a tile, and at least four tiles, as far as tiles of at least 128 x 256 allow. gemm
// passes the processors available to the process (omp_get_num_procs), never the thread setting.
struct GemmTiles {
  int64_t rows = 0;
  int64_t cols = 0;
};
GemmTiles plan_gemm_tiles(int64_t m, int64_t n, int cores);

// C = activation(A B (+ bias[j] on column j when bias is non-null)). Both operands must be
// gemm_mappable. Big products are split into tiles run in parallel (plan_gemm_tiles); the split
// depends on the shape and the machine's processor count only, so results are the same for any
// thread count. The activation runs on each tile right after its product (while it is in cache),
// with the same functor as the eager op, so relu(linear(x)) and linear(x, activation relu) are
// bit-identical.
template <typename T>
void gemm(const T* a, const T* b, T* c, const GemmShape& shape, const T* bias,
          Activation activation = Activation::None);

extern template void gemm<float>(const float*, const float*, float*, const GemmShape&, const float*, Activation);
extern template void gemm<double>(const double*, const double*, double*, const GemmShape&, const double*,
                                  Activation);

}  // namespace ember::cpu
