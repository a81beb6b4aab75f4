// The small GEMM: a tile of up to 6 x 2 vectors of outputs stays in registers while the kernel
// walks the inner dimension once, multiplying a broadcast element of the left operand into a
// vector row of the right operand (one outer-product update per step, no packing of the
// left operand). Written with GCC/Clang vector extensions (simd_vector.h). C = A B is computed
// directly, transposed (C^T = B^T A^T) or as dot products (small_gemm_dot.cpp), whichever plan
// costs least for the operands' layouts.
#include "kernels/cpu/small_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/simd_vector.h"

namespace ember::cpu {

namespace {

using simd::Lanes;
using simd::Vector;

// A tile is kTileRows x kTileVectors accumulators: with 2 operand vectors and one broadcast
// that is 15 of AVX2's 16 vector registers; per step 12 multiply-adds for 8 loads. 6 x 2 ran
// 1.1-1.4x faster than 4 x 3, 8 x 1 or 3 x 4 on the seed shapes (Zen 3; docs/PERFORMANCE.md).
constexpr int kTileRows = 6;
constexpr int kTileVectors = 2;

// The product as the kernel computes it: D = P Q, rows x cols, with Q's rows read as vectors
// (its first `full_cols` columns in place, `q_row_stride` apart; the rest from `tail`, a
// zero-padded k x lanes copy). D(i, j) lands at out[i * out_row_stride + j * out_col_stride];
// the bias runs along D's columns (column_bias, length cols) or along its rows (row_bias).
template <typename T>
struct Problem {
  const T* p = nullptr;
  int64_t p_row_stride = 0, p_col_stride = 0;
  const T* q = nullptr;
  int64_t q_row_stride = 0;
  int64_t full_cols = 0;
  const T* tail = nullptr;
  T* out = nullptr;
  int64_t out_row_stride = 0, out_col_stride = 0;
  int64_t rows = 0, cols = 0, k = 0;
  const T* column_bias = nullptr;
  const T* row_bias = nullptr;
};

// Rows x Vectors outputs starting at D(row, col) whose Q columns start at `q`; `bias` holds the
// tile's column bias vectors; only the first `valid` columns are stored.
template <typename T, int Rows, int Vectors>
void tile(const Problem<T>& problem, int64_t row, int64_t col, const T* q, int64_t q_row_stride,
          const Vector<T>* bias, int64_t valid) {
  constexpr int64_t lanes = Lanes<T>::kCount;
  Vector<T> sums[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    const T row_bias = problem.row_bias != nullptr ? problem.row_bias[row + r] : T(0);
    for (int v = 0; v < Vectors; ++v) sums[r][v] = bias[v] + row_bias;
  }
  const T* p = problem.p + row * problem.p_row_stride;
  for (int64_t depth = 0; depth < problem.k; ++depth) {
    Vector<T> operand[Vectors];
    for (int v = 0; v < Vectors; ++v) {
      operand[v] = simd::load(q + depth * q_row_stride + v * lanes);
      // Loaded once rather than once per row (simd::keep_in_register): up to 1.5x on the seed
      // products with AVX-512's 32 registers; with 16, it cost AVX2 builds 5% (more spills).
      if constexpr (simd::kVectorBytes == 64) simd::keep_in_register<T>(operand[v]);
    }
    for (int r = 0; r < Rows; ++r) {
      const T scalar = p[r * problem.p_row_stride + depth * problem.p_col_stride];
      for (int v = 0; v < Vectors; ++v) sums[r][v] += scalar * operand[v];
    }
  }
  T* out = problem.out + row * problem.out_row_stride + col * problem.out_col_stride;
  // Stores take each vector by value: taking the address of `sums` makes the compiler copy every
  // accumulator through the stack (24 more memory operations per tile); by value, the seed MLP's
  // backward products ran 8-25% faster.
  if (problem.out_col_stride == 1 && valid == Vectors * lanes) {
    for (int r = 0; r < Rows; ++r)
      for (int v = 0; v < Vectors; ++v) simd::store(out + r * problem.out_row_stride + v * lanes, sums[r][v]);
    return;
  }
  T values[Rows][Vectors * lanes];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vectors; ++v) simd::store(values[r] + v * lanes, sums[r][v]);
  if (problem.out_row_stride == 1) {
    // The transposed plan: D's column j is a run of Rows values of one row of C.
    for (int64_t j = 0; j < valid; ++j) {
      T* run = out + j * problem.out_col_stride;
      for (int r = 0; r < Rows; ++r) run[r] = values[r][j];
    }
    return;
  }
  for (int64_t j = 0; j < valid; ++j)
    for (int r = 0; r < Rows; ++r) out[r * problem.out_row_stride + j * problem.out_col_stride] = values[r][j];
}

// All rows of D for the column block starting at `col`: full tiles, then the leftover rows.
template <typename T, int Vectors>
void column_block(const Problem<T>& problem, int64_t col, const T* q, int64_t q_row_stride, const Vector<T>* bias,
                  int64_t valid) {
  int64_t row = 0;
  for (; row + kTileRows <= problem.rows; row += kTileRows)
    tile<T, kTileRows, Vectors>(problem, row, col, q, q_row_stride, bias, valid);
  switch (problem.rows - row) {
    case 5: return tile<T, 5, Vectors>(problem, row, col, q, q_row_stride, bias, valid);
    case 4: return tile<T, 4, Vectors>(problem, row, col, q, q_row_stride, bias, valid);
    case 3: return tile<T, 3, Vectors>(problem, row, col, q, q_row_stride, bias, valid);
    case 2: return tile<T, 2, Vectors>(problem, row, col, q, q_row_stride, bias, valid);
    case 1: return tile<T, 1, Vectors>(problem, row, col, q, q_row_stride, bias, valid);
    default: return;
  }
}

// The column bias of a block of `vectors` vectors at `col`, zero past the last column.
template <typename T>
void load_bias(const Problem<T>& problem, int64_t col, int64_t vectors, Vector<T>* bias) {
  constexpr int64_t lanes = Lanes<T>::kCount;
  T values[kTileVectors * lanes] = {};
  if (problem.column_bias != nullptr)
    std::copy(problem.column_bias + col, problem.column_bias + std::min(problem.cols, col + vectors * lanes), values);
  std::memcpy(bias, values, vectors * sizeof(Vector<T>));
}

template <typename T>
void run(const Problem<T>& problem) {
  constexpr int64_t lanes = Lanes<T>::kCount;
  const int64_t full_vectors = problem.full_cols / lanes;
  Vector<T> bias[kTileVectors];
  for (int64_t first = 0; first < full_vectors; first += kTileVectors) {
    const int64_t vectors = std::min<int64_t>(kTileVectors, full_vectors - first);
    const int64_t col = first * lanes;
    const int64_t valid = std::min(vectors * lanes, problem.cols - col);
    load_bias(problem, col, vectors, bias);
    const T* q = problem.q + col;
    if (vectors == kTileVectors) {
      column_block<T, kTileVectors>(problem, col, q, problem.q_row_stride, bias, valid);
    } else {
      column_block<T, 1>(problem, col, q, problem.q_row_stride, bias, valid);
    }
  }
  if (problem.full_cols < problem.cols) {
    load_bias(problem, problem.full_cols, 1, bias);
    column_block<T, 1>(problem, problem.full_cols, problem.tail, lanes, bias, problem.cols - problem.full_cols);
  }
}

// Scratch for copied operands, one per thread, kept between calls (no allocation per GEMM once
// the largest shape has been seen).
template <typename T>
T* scratch(size_t count) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

// Copies columns [first, first + count) of the k x cols matrix `q` into rows of `width` values
// (zero-padded past `count`), the layout the kernel streams. A lane-wide strip of columns at a
// time: when q is column-major that reads `lanes` sequential streams instead of touching a new
// cache line per element (3-4x faster for a 100 x 32 transpose), and each lanes x lanes block of
// the strip is loaded as column vectors and transposed in registers (simd::transpose: the seed
// step's [100, 32] copy took 2 µs element by element).
template <typename T>
void copy_columns(StridedMatrix<T> q, int64_t k, int64_t first, int64_t count, int64_t width, T* to) {
  constexpr int64_t lanes = Lanes<T>::kCount;
  for (int64_t strip = 0; strip < width; strip += lanes) {
    const int64_t strip_count = std::clamp<int64_t>(count - strip, 0, lanes);
    const T* columns = q.data + (first + strip) * q.col_stride;
    int64_t depth = 0;
    if (q.row_stride == 1) {
      for (; depth + lanes <= k; depth += lanes) {
        Vector<T> block[lanes];
        for (int64_t j = 0; j < lanes; ++j)
          block[j] = j < strip_count ? simd::load(columns + j * q.col_stride + depth) : Vector<T>{};
        simd::transpose<T>(block);
        for (int64_t t = 0; t < lanes; ++t) simd::store(to + (depth + t) * width + strip, block[t]);
      }
    }
    for (; depth < k; ++depth) {
      T* row = to + depth * width + strip;
      const T* from = columns + depth * q.row_stride;
      for (int64_t j = 0; j < strip_count; ++j) row[j] = from[j * q.col_stride];
      for (int64_t j = strip_count; j < lanes; ++j) row[j] = T(0);
    }
  }
}

// Cost of computing D = P Q (rows x cols) in multiply-add vector steps: the steps themselves, plus
// ~2 per element copied to make Q streamable and per element stored with a stride.
int64_t plan_cost(int64_t rows, int64_t cols, int64_t k, bool q_streamable, bool scattered_stores, int64_t lanes) {
  const int64_t vectors = (cols + lanes - 1) / lanes;
  const int64_t copied = q_streamable ? k * (cols % lanes) : k * cols;
  return rows * vectors * k + 2 * copied + (scattered_stores ? 2 * rows * cols : 0);
}

// The dot-product form's cost in the same units: per output, the vector steps, the K % lanes
// scalar steps and about `lanes` operations to fold the partial sums.
int64_t dot_cost(int64_t m, int64_t n, int64_t k, int64_t lanes) { return m * n * (k / lanes + k % lanes + lanes); }

// The vector plans give a partial last vector (C's last n % lanes columns, or in the transposed
// plan its last m % lanes rows) a whole tile: with 16 lanes, a 4-column tail of 256 rows costs as
// many broadcasts and multiply-adds as 16 columns would. Computed as a product of its own, the
// tail can take the other orientation instead (4 rows x 16 vectors: 64 vector steps per p instead
// of 256). Returns false, doing nothing, when splitting does not cost less than `whole_cost`. Each
// part is planned from its shape and strides alone, like any product; where both take a vector
// plan (each sums an element from its bias over p in order), the split changes no result.
template <typename T>
bool split_off_tail(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t m, int64_t n,
                    int64_t k, const T* bias, bool transposed, int64_t whole_cost) {
  constexpr int64_t lanes = Lanes<T>::kCount;
  // The best vector plan of an rows x cols block of C, as small_gemm would choose it.
  auto best_cost = [&](int64_t rows, int64_t cols) {
    return std::min(plan_cost(rows, cols, k, b.col_stride == 1 || cols < lanes, false, lanes),
                    plan_cost(cols, rows, k, a.row_stride == 1 || rows < lanes, true, lanes));
  };
  if (!transposed && n > lanes && n % lanes != 0) {
    const int64_t full = n / lanes * lanes;
    if (best_cost(m, full) + best_cost(m, n - full) >= whole_cost) return false;
    small_gemm(a, b, c, c_row_stride, m, full, k, bias);
    const StridedMatrix<T> b_tail{b.data + full * b.col_stride, b.row_stride, b.col_stride};
    small_gemm(a, b_tail, c + full, c_row_stride, m, n - full, k, bias != nullptr ? bias + full : nullptr);
    return true;
  }
  if (transposed && m > lanes && m % lanes != 0) {
    const int64_t full = m / lanes * lanes;
    if (best_cost(full, n) + best_cost(m - full, n) >= whole_cost) return false;
    small_gemm(a, b, c, c_row_stride, full, n, k, bias);
    const StridedMatrix<T> a_tail{a.data + full * a.row_stride, a.row_stride, a.col_stride};
    small_gemm(a_tail, b, c + full * c_row_stride, c_row_stride, m - full, n, k, bias);
    return true;
  }
  return false;
}

}  // namespace

bool use_small_gemm(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t limit = int64_t{1} << 21;
  // Each size is checked first so that m * n * k cannot overflow.
  return k <= 512 && m <= limit && n <= limit && m * n * k <= limit;
}

template <typename T>
void small_gemm(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t m, int64_t n, int64_t k,
                const T* bias) {
  constexpr int64_t lanes = Lanes<T>::kCount;
  if (m <= 0 || n <= 0) return;
  // Either C = A B with B's rows as vectors, or C^T = B^T A^T with A's columns as vectors (C
  // written transposed), or dot products when both operands run along K: whichever needs fewer
  // steps, copies and strided stores.
  const bool b_streamable = b.col_stride == 1 || n < lanes;
  const bool a_streamable = a.row_stride == 1 || m < lanes;
  const int64_t direct_cost = plan_cost(m, n, k, b_streamable, false, lanes);
  const int64_t transposed_cost = plan_cost(n, m, k, a_streamable, true, lanes);
  const bool along_k = (a.col_stride == 1 || k <= 1) && (b.row_stride == 1 || k <= 1);
  if (along_k && dot_cost(m, n, k, lanes) < std::min(direct_cost, transposed_cost))
    return small_gemm_dot(a, b, c, c_row_stride, m, n, k, bias);
  const bool transposed = transposed_cost < direct_cost;
  if (split_off_tail(a, b, c, c_row_stride, m, n, k, bias, transposed, std::min(direct_cost, transposed_cost))) return;
  Problem<T> problem{};
  StridedMatrix<T> q;
  if (transposed) {
    problem = {.p = b.data, .p_row_stride = b.col_stride, .p_col_stride = b.row_stride,
               .out = c, .out_row_stride = 1, .out_col_stride = c_row_stride,
               .rows = n, .cols = m, .k = k, .row_bias = bias};
    q = {a.data, a.col_stride, a.row_stride};
  } else {
    problem = {.p = a.data, .p_row_stride = a.row_stride, .p_col_stride = a.col_stride,
               .out = c, .out_row_stride = c_row_stride, .out_col_stride = 1,
               .rows = m, .cols = n, .k = k, .column_bias = bias};
    q = b;
  }
  const int64_t cols = problem.cols;
  if (q.col_stride == 1 || cols < lanes) {
    problem.q = q.data;
    problem.q_row_stride = q.row_stride;
    problem.full_cols = cols / lanes * lanes;
    if (problem.full_cols < cols) {
      T* tail = scratch<T>(k * lanes);
      copy_columns(q, k, problem.full_cols, cols - problem.full_cols, lanes, tail);
      problem.tail = tail;
    }
  } else {
    const int64_t width = (cols + lanes - 1) / lanes * lanes;
    T* copy = scratch<T>(k * width);
    copy_columns(q, k, 0, cols, width, copy);
    problem.q = copy;
    problem.q_row_stride = width;
    problem.full_cols = width;
  }
  run(problem);
}

template void small_gemm<float>(StridedMatrix<float>, StridedMatrix<float>, float*, int64_t, int64_t, int64_t,
                                int64_t, const float*);
template void small_gemm<double>(StridedMatrix<double>, StridedMatrix<double>, double*, int64_t, int64_t, int64_t,
                                 int64_t, const double*);

}  // namespace ember::cpu
