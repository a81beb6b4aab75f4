// A register-blocked GEMM for products too small for Eigen's packing to pay off (the seed MLP's
// [32,100] x [100,256] and its K = 10 / 32 backward products): C = A B (+ bias[j] on column j).
#pragma once

#include <cstdint>

namespace ember::cpu {

// A strided matrix: element (i, j) is data[i * row_stride + j * col_stride].
template <typename T>
struct StridedMatrix {
  const T* data;
  int64_t row_stride;
  int64_t col_stride;
};

// Whether an m x n x k product goes to small_gemm rather than Eigen: small enough that its
// operands stay in L1/L2 between the kernel's passes (measured against Eigen in
// docs/PERFORMANCE.md, "small GEMM kernel"; the wide MLP's products all stay on Eigen).
bool use_small_gemm(int64_t m, int64_t n, int64_t k);

// C[i, j] = sum over p of A[i, p] B[p, j] (+ bias[j] when bias is non-null) for an m x n block of
// C whose rows are `c_row_stride` apart and whose columns are contiguous. Any strides work; a
// copy is made only of an operand the kernel cannot stream along its vector lanes. The plan
// (and so the summation order) is chosen from the shape and strides alone; in the outer-product
// plans the sum over p runs in order from the bias, one accumulator per output element. Results
// never depend on threads. Single-threaded: gemm() runs it per task.
template <typename T>
void small_gemm(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t m, int64_t n, int64_t k,
                const T* bias);

// The dot-product form small_gemm picks when A's rows and B's columns are both contiguous along
// K (a.col_stride == 1 and b.row_stride == 1, or k <= 1) and few outputs share each operand row.
// Per output the sum runs in vector lanes along K, then the lanes as a tree, then the K % lanes
// leftover terms: fixed by the shape, like small_gemm's.
template <typename T>
void small_gemm_dot(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t m, int64_t n,
                    int64_t k, const T* bias);

extern template void small_gemm<float>(StridedMatrix<float>, StridedMatrix<float>, float*, int64_t, int64_t,
                                       int64_t, int64_t, const float*);
extern template void small_gemm<double>(StridedMatrix<double>, StridedMatrix<double>, double*, int64_t, int64_t,
                                        int64_t, int64_t, const double*);

extern template void small_gemm_dot<float>(StridedMatrix<float>, StridedMatrix<float>, float*, int64_t, int64_t,
                                           int64_t, int64_t, const float*);
extern template void small_gemm_dot<double>(StridedMatrix<double>, StridedMatrix<double>, double*, int64_t, int64_t,
                                            int64_t, int64_t, const double*);

}  // namespace ember::cpu
