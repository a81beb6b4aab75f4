// The small GEMM's dot-product form, for C = A B when A's rows and B's columns are both
// contiguous along K (x W^T with a narrow W, e.g. the seed MLP's [32,256] x [256,10]): vectors
// run along K, a tile of 4 x 4 outputs (3 x 4 below AVX-512) keeps one vector of partial sums
// each, and the tile's sums are folded together at the end. Nothing is copied, where the
// outer-product form would have to copy one operand into vector-friendly rows.
#include <algorithm>

#include "kernels/cpu/simd_vector.h"
#include "kernels/cpu/small_gemm.h"

namespace ember::cpu {

namespace {

using simd::Lanes;
using simd::Vector;

// A tile's partial sums, its left vectors and one right vector fill the registers: 4 x 4 + 4 + 1
// of AVX-512's 32 (16 sums: one horizontal_sums), 3 x 4 + 3 + 1 of AVX2's 16. Per step 16 (12)
// multiply-adds for 8 (7) loads.
constexpr int kDotRows = simd::kVectorBytes == 64 ? 4 : 3;
constexpr int kDotCols = 4;

template <typename T>
struct DotProblem {
  const T* a;
  int64_t a_row_stride;  // A(i, p) = a[i * a_row_stride + p]
  const T* b;
  int64_t b_col_stride;  // B(p, j) = b[p + j * b_col_stride]
  T* c;
  int64_t c_row_stride;
  int64_t m, n, k;
  const T* bias;
};

// Outputs [row, row + Rows) x [col, col + Cols): the vector part of K in lanes, then the lanes
// folded as a tree (simd::horizontal_sums, `lanes` outputs at a time), then the K % lanes leftover
// terms, in order.
template <typename T, int Rows, int Cols>
void dot_tile(const DotProblem<T>& problem, int64_t row, int64_t col) {
  constexpr int lanes = static_cast<int>(Lanes<T>::kCount);
  constexpr int folds = (Rows * Cols + lanes - 1) / lanes;
  const int64_t vector_k = problem.k / lanes * lanes;
  const T* a = problem.a + row * problem.a_row_stride;
  const T* b = problem.b + col * problem.b_col_stride;
  Vector<T> sums[folds * lanes] = {};  // output (r, j) at r * Cols + j; the rest stay zero
  for (int64_t p = 0; p < vector_k; p += lanes) {
    Vector<T> left[Rows];
    for (int r = 0; r < Rows; ++r) {
      left[r] = simd::load(a + r * problem.a_row_stride + p);
      simd::keep_in_register<T>(left[r]);
    }
    for (int j = 0; j < Cols; ++j) {
      Vector<T> right = simd::load(b + j * problem.b_col_stride + p);
      simd::keep_in_register<T>(right);
      for (int r = 0; r < Rows; ++r) sums[r * Cols + j] += left[r] * right;
    }
  }
  T totals[folds * lanes];
  for (int fold = 0; fold < folds; ++fold)
    simd::store(totals + fold * lanes, simd::horizontal_sums<T>(sums + fold * lanes));
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Cols; ++j) {
      T total = totals[r * Cols + j];
      for (int64_t p = vector_k; p < problem.k; ++p)
        total += a[r * problem.a_row_stride + p] * b[j * problem.b_col_stride + p];
      if (problem.bias != nullptr) total += problem.bias[col + j];
      problem.c[(row + r) * problem.c_row_stride + col + j] = total;
    }
  }
}

template <typename T, int Rows>
void dot_rows(const DotProblem<T>& problem, int64_t row) {
  int64_t col = 0;
  for (; col + kDotCols <= problem.n; col += kDotCols) dot_tile<T, Rows, kDotCols>(problem, row, col);
  switch (problem.n - col) {
    case 3: return dot_tile<T, Rows, 3>(problem, row, col);
    case 2: return dot_tile<T, Rows, 2>(problem, row, col);
    case 1: return dot_tile<T, Rows, 1>(problem, row, col);
    default: return;
  }
}

}  // namespace

template <typename T>
void small_gemm_dot(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t m, int64_t n,
                    int64_t k, const T* bias) {
  const DotProblem<T> problem{a.data, a.row_stride, b.data, b.col_stride, c, c_row_stride, m, n, k, bias};
  int64_t row = 0;
  for (; row + kDotRows <= m; row += kDotRows) dot_rows<T, kDotRows>(problem, row);
  switch (m - row) {
    case 3: return dot_rows<T, 3>(problem, row);
    case 2: return dot_rows<T, 2>(problem, row);
    case 1: return dot_rows<T, 1>(problem, row);
    default: return;
  }
}

template void small_gemm_dot<float>(StridedMatrix<float>, StridedMatrix<float>, float*, int64_t, int64_t, int64_t,
                                    int64_t, const float*);
template void small_gemm_dot<double>(StridedMatrix<double>, StridedMatrix<double>, double*, int64_t, int64_t,
                                     int64_t, int64_t, const double*);

}  // namespace ember::cpu
