// One GEMM tile through OpenBLAS or Eigen (see gemm_library.h). Eigen's own threads stay off
// (EIGEN_DONT_PARALLELIZE), and OpenBLAS is kept to the calling thread: gemm.cpp already runs
// tiles in parallel, and a library that split a tile by the thread count could change its bits.
#define EIGEN_DONT_PARALLELIZE
#include "kernels/cpu/gemm_library.h"

// GCC 12's avx512fintrin.h initializes a variable with itself (`__m256d __Y = __Y;`, on purpose),
// and -Wmaybe-uninitialized reports it wherever Eigen's AVX-512 packing inlines it: 268 false
// warnings for this file on AVX-512 machines. They are raised where the code is inlined, so a
// push/pop around the include would not reach them.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "kernels/cpu/openblas_library.h"
#include "runtime/error.h"

#ifdef EMBER_HAS_OPENBLAS
#include <cblas.h>  // the enums only: the functions come from openblas_functions()
#endif

namespace ember::cpu {

namespace {

bool row_major_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return (col_stride == 1 || cols <= 1) && (rows <= 1 || row_stride >= cols);
}

// The distance between rows (or, for a column-major operand, columns) as BLAS and Eigen want it:
// along a dim of size 1 the tensor's stride is arbitrary, but the library still checks it.
int64_t leading_stride(int64_t outer, int64_t inner, int64_t outer_stride) {
  return outer <= 1 ? std::max<int64_t>(inner, 1) : outer_stride;
}

template <typename T, int Order>
using ConstMatrix = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, Eigen::Unaligned,
                               Eigen::OuterStride<>>;
template <typename T>
using OutMatrix = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, Eigen::Unaligned,
                             Eigen::OuterStride<>>;

template <typename T, int Order>
ConstMatrix<T, Order> map_matrix(StridedMatrix<T> matrix, int64_t rows, int64_t cols) {
  const int64_t outer = Order == Eigen::RowMajor ? leading_stride(rows, cols, matrix.row_stride)
                                                 : leading_stride(cols, rows, matrix.col_stride);
  return ConstMatrix<T, Order>(matrix.data, rows, cols, Eigen::OuterStride<>(outer));
}

template <typename T, int OrderA, int OrderB>
void eigen_product(StridedMatrix<T> a, StridedMatrix<T> b, OutMatrix<T>& out, int64_t k) {
  out.noalias() += map_matrix<T, OrderA>(a, out.rows(), k) * map_matrix<T, OrderB>(b, k, out.cols());
}

template <typename T>
void eigen_tile(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t rows, int64_t cols,
                int64_t k, bool accumulate);

// Eigen multiplies a row by a column, or a matrix by a vector, with one float accumulator per
// output: a dot product of 1.6e7 terms came out 2% off, and 3e7 ones summed to 2^24. Such a
// product deeper than one block is summed block by block, the blocks' float results adding up
// in double (BLAS's sdot and sgemv keep many partial sums; the error is then that of one block).
constexpr int64_t kVectorDepthBlock = 4096;

void blocked_vector_tile(StridedMatrix<float> a, StridedMatrix<float> b, float* c, int64_t c_row_stride,
                         int64_t rows, int64_t cols, int64_t k, bool accumulate) {
  std::vector<double> sums(static_cast<size_t>(rows * cols), 0.0);
  std::vector<float> block(static_cast<size_t>(rows * cols));
  for (int64_t start = 0; start < k; start += kVectorDepthBlock) {
    const int64_t depth = std::min(kVectorDepthBlock, k - start);
    const StridedMatrix<float> a_part{a.data + start * a.col_stride, a.row_stride, a.col_stride};
    const StridedMatrix<float> b_part{b.data + start * b.row_stride, b.row_stride, b.col_stride};
    eigen_tile(a_part, b_part, block.data(), cols, rows, cols, depth, false);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += block[i];
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float& out = c[r * c_row_stride + j];
      const double sum = sums[static_cast<size_t>(r * cols + j)];
      out = static_cast<float>(accumulate ? static_cast<double>(out) + sum : sum);
    }
}

template <typename T>
void eigen_tile(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t rows, int64_t cols,
                int64_t k, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if ((rows == 1 || cols == 1) && k > kVectorDepthBlock)
      return blocked_vector_tile(a, b, c, c_row_stride, rows, cols, k, accumulate);
  }
  OutMatrix<T> out(c, rows, cols, Eigen::OuterStride<>(c_row_stride));
  if (!accumulate) out.setZero();
  const bool a_rows = row_major_layout(rows, k, a.row_stride, a.col_stride);
  const bool b_rows = row_major_layout(k, cols, b.row_stride, b.col_stride);
  if (a_rows && b_rows) return eigen_product<T, Eigen::RowMajor, Eigen::RowMajor>(a, b, out, k);
  if (a_rows) return eigen_product<T, Eigen::RowMajor, Eigen::ColMajor>(a, b, out, k);
  if (b_rows) return eigen_product<T, Eigen::ColMajor, Eigen::RowMajor>(a, b, out, k);
  eigen_product<T, Eigen::ColMajor, Eigen::ColMajor>(a, b, out, k);
}

#ifdef EMBER_HAS_OPENBLAS
// OpenBLAS's OpenMP build takes as many threads as the calling thread's OpenMP setting allows.
// Setting it to 1 for the call (and back after) keeps each tile on its own thread, inside our
// parallel regions and outside them alike.
class OneOpenMpThread {
 public:
  OneOpenMpThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOpenMpThread() { omp_set_num_threads(saved_); }
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int saved_;
};

bool fits_blas_int(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](int64_t value) { return value <= INT_MAX; });
}

template <typename T>
void openblas_tile(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t rows, int64_t cols,
                   int64_t k, bool accumulate) {
  const bool a_rows = row_major_layout(rows, k, a.row_stride, a.col_stride);
  const bool b_rows = row_major_layout(k, cols, b.row_stride, b.col_stride);
  const int64_t lda = a_rows ? leading_stride(rows, k, a.row_stride) : leading_stride(k, rows, a.col_stride);
  const int64_t ldb = b_rows ? leading_stride(k, cols, b.row_stride) : leading_stride(cols, k, b.col_stride);
  // Debian's OpenBLAS takes 32-bit sizes; a tile beyond them (never one of gemm.cpp's tiles, but
  // possibly a huge K or stride) goes to Eigen.
  if (!fits_blas_int({rows, cols, k, lda, ldb, c_row_stride})) {
    return eigen_tile(a, b, c, c_row_stride, rows, cols, k, accumulate);
  }
  const CBLAS_TRANSPOSE a_op = a_rows ? CblasNoTrans : CblasTrans;
  const CBLAS_TRANSPOSE b_op = b_rows ? CblasNoTrans : CblasTrans;
  const T beta = accumulate ? T{1} : T{0};
  const OneOpenMpThread one_thread;
  const OpenBlasFunctions& blas = *openblas_functions();
  if constexpr (std::is_same_v<T, float>) {
    blas.sgemm(CblasRowMajor, a_op, b_op, rows, cols, k, 1.0f, a.data, lda, b.data, ldb, beta, c, c_row_stride);
  } else {
    blas.dgemm(CblasRowMajor, a_op, b_op, rows, cols, k, 1.0, a.data, lda, b.data, ldb, beta, c, c_row_stride);
  }
}
#endif

bool check_openblas() {
#ifdef EMBER_HAS_OPENBLAS
  const OpenBlasFunctions* blas = openblas_functions();
  if (blas == nullptr) return false;
  // The first call sizes OpenBLAS's buffers for one thread; later calls then change nothing
  // global, so tiles may call it concurrently.
  const OneOpenMpThread one_thread;
  blas->set_num_threads(1);
  return true;
#else
  return false;
#endif
}

GemmLibrary library_from_environment() {
  const char* value = std::getenv("EMBER_CPU_GEMM");
  const std::string_view name = value == nullptr ? "" : value;
  check(name.empty() || name == "openblas" || name == "eigen", "EMBER_CPU_GEMM must be openblas or eigen, got '{}'",
        name);
  if (name == "eigen" || !openblas_available()) return GemmLibrary::Eigen;
  return GemmLibrary::OpenBlas;
}

std::atomic<GemmLibrary>& chosen_library() {
  static std::atomic<GemmLibrary> library{library_from_environment()};
  return library;
}

}  // namespace

bool openblas_available() {
  static const bool available = check_openblas();
  return available;
}

GemmLibrary gemm_library() { return chosen_library().load(std::memory_order_relaxed); }

void set_gemm_library(GemmLibrary library) {
  check(library != GemmLibrary::OpenBlas || openblas_available(), "set_gemm_library: OpenBLAS is not available ({})",
        openblas_unavailable_reason());
  chosen_library().store(library, std::memory_order_relaxed);
}

std::string_view gemm_library_name(GemmLibrary library) {
  return library == GemmLibrary::OpenBlas ? "OpenBLAS" : "Eigen";
}

std::string gemm_library_description() {
  const GemmLibrary library = gemm_library();
  if (library == GemmLibrary::OpenBlas) return fmt::format("{} {}", gemm_library_name(library), openblas_core());
  return std::string(gemm_library_name(library));
}

template <typename T>
void tile_product(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t rows, int64_t cols,
                  int64_t k, bool accumulate) {
#ifdef EMBER_HAS_OPENBLAS
  if (gemm_library() == GemmLibrary::OpenBlas) return openblas_tile(a, b, c, c_row_stride, rows, cols, k, accumulate);
#endif
  eigen_tile(a, b, c, c_row_stride, rows, cols, k, accumulate);
}

template void tile_product<float>(StridedMatrix<float>, StridedMatrix<float>, float*, int64_t, int64_t, int64_t,
                                  int64_t, bool);
template void tile_product<double>(StridedMatrix<double>, StridedMatrix<double>, double*, int64_t, int64_t, int64_t,
                                   int64_t, bool);

}  // namespace ember::cpu
