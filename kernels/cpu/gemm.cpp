// The GEMM behind matmul, mm, bmm and linear: small products (use_small_gemm) go to the
// register-blocked small_gemm, the rest to Eigen. Eigen's own OpenMP parallelism is turned
// off here: its blocking sizes depend on the thread count, which would change float results
// with set_num_threads. Instead big products are cut into fixed tiles (chosen from the shape
// alone) that run in parallel, each a single-threaded Eigen product.
#define EIGEN_DONT_PARALLELIZE
#include "kernels/cpu/gemm.h"

#include <Eigen/Core>
#include <algorithm>

#include "kernels/cpu/small_gemm.h"
#include "kernels/functors.h"
#include "runtime/parallel.h"

namespace ember::cpu {

namespace {

constexpr int64_t kTileRows = 128;
constexpr int64_t kTileCols = 256;
// A product of at least this many multiply-adds is tiled (smaller ones are one Eigen call).
constexpr int64_t kTileWork = int64_t{1} << 23;
// Below this many multiply-adds in total, waking threads costs more than it saves.
constexpr int64_t kParallelWork = int64_t{1} << 18;

template <typename T, int Order>
using ConstMatrix = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, Eigen::Unaligned,
                               Eigen::OuterStride<>>;
template <typename T>
using OutMatrix = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, Eigen::Unaligned,
                             Eigen::OuterStride<>>;
template <typename T>
using BiasRow = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;

bool is_row_major(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return (col_stride == 1 || cols <= 1) && (rows <= 1 || row_stride >= cols);
}
bool is_col_major(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return (row_stride == 1 || rows <= 1) && (cols <= 1 || col_stride >= rows);
}

// Eigen needs an outer stride even along a size-1 dim, where the tensor's stride is arbitrary.
template <typename T, int Order>
ConstMatrix<T, Order> map_matrix(const T* data, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  int64_t outer;
  if constexpr (Order == Eigen::RowMajor) {
    outer = rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride;
  } else {
    outer = cols <= 1 ? std::max<int64_t>(rows, 1) : col_stride;
  }
  return ConstMatrix<T, Order>(data, rows, cols, Eigen::OuterStride<>(outer));
}

// The epilogue on one finished tile: rows of `cols` contiguous values, `stride` apart.
template <typename T, typename Functor>
void apply_to_tile(T* tile, int64_t rows, int64_t cols, int64_t stride, Functor functor) {
  for (int64_t row = 0; row < rows; ++row) {
    T* values = tile + row * stride;
    for (int64_t col = 0; col < cols; ++col) values[col] = functor(values[col]);
  }
}

template <typename T>
void apply_activation(T* tile, int64_t rows, int64_t cols, int64_t stride, Activation activation) {
  switch (activation) {
    case Activation::None: return;
    case Activation::Relu: return apply_to_tile(tile, rows, cols, stride, fn::Relu{});
    case Activation::Gelu: return apply_to_tile(tile, rows, cols, stride, fn::GeluErf{});
    case Activation::GeluTanh: return apply_to_tile(tile, rows, cols, stride, fn::GeluTanh{});
  }
}

template <typename T, int OrderA, int OrderB>
void gemm_tiles(const T* a, const T* b, T* c, const GemmShape& shape, const T* bias, Activation activation) {
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const int64_t batches = shape.batch_sizes.product();
  const bool small = use_small_gemm(m, n, k);
  const bool tiled = !small && m * n * k >= kTileWork;
  const int64_t tile_rows = tiled ? kTileRows : std::max<int64_t>(m, 1);
  const int64_t tile_cols = tiled ? kTileCols : std::max<int64_t>(n, 1);
  const int64_t row_tiles = (m + tile_rows - 1) / tile_rows;
  const int64_t col_tiles = (n + tile_cols - 1) / tile_cols;
  const int64_t tiles = row_tiles * col_tiles;
  const int64_t tasks = batches * tiles;
  const bool parallel = tasks > 1 && batches * m * n * k >= kParallelWork && get_num_threads() > 1;

#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t batch = task / tiles;
    const int64_t first_row = (task % tiles) / col_tiles * tile_rows;
    const int64_t first_col = (task % tiles) % col_tiles * tile_cols;
    const int64_t rows = std::min(tile_rows, m - first_row);
    const int64_t cols = std::min(tile_cols, n - first_col);
    int64_t a_offset = 0, b_offset = 0;
    for (int64_t d = shape.batch_sizes.size() - 1, rest = batch; d >= 0; --d) {
      const int64_t index = rest % shape.batch_sizes[d];
      rest /= shape.batch_sizes[d];
      a_offset += index * shape.a_batch_strides[d];
      b_offset += index * shape.b_batch_strides[d];
    }
    const T* tile_a = a + a_offset + first_row * shape.a_row_stride;
    const T* tile_b = b + b_offset + first_col * shape.b_col_stride;
    T* tile_c = c + batch * m * n + first_row * n + first_col;
    if (small) {
      small_gemm<T>({tile_a, shape.a_row_stride, shape.a_col_stride}, {tile_b, shape.b_row_stride, shape.b_col_stride},
                    tile_c, n, rows, cols, k, bias == nullptr ? nullptr : bias + first_col);
      apply_activation(tile_c, rows, cols, n, activation);
      continue;
    }
    OutMatrix<T> out(tile_c, rows, cols, Eigen::OuterStride<>(n));
    // The bias goes in first and the product accumulates onto it: Eigen's GEMM adds into its
    // destination in its output loop, so x W^T + b is one pass over C.
    if (bias != nullptr) {
      out.rowwise() = BiasRow<T>(bias + first_col, cols);
    } else {
      out.setZero();
    }
    if (k > 0) {
      const auto lhs = map_matrix<T, OrderA>(tile_a, rows, k, shape.a_row_stride, shape.a_col_stride);
      const auto rhs = map_matrix<T, OrderB>(tile_b, k, cols, shape.b_row_stride, shape.b_col_stride);
      out.noalias() += lhs * rhs;
    }
    apply_activation(out.data(), rows, cols, n, activation);
  }
}

}  // namespace

bool gemm_mappable(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return is_row_major(rows, cols, row_stride, col_stride) || is_col_major(rows, cols, row_stride, col_stride);
}

template <typename T>
void gemm(const T* a, const T* b, T* c, const GemmShape& shape, const T* bias, Activation activation) {
  const bool a_rows = is_row_major(shape.m, shape.k, shape.a_row_stride, shape.a_col_stride);
  const bool b_rows = is_row_major(shape.k, shape.n, shape.b_row_stride, shape.b_col_stride);
  if (a_rows && b_rows) {
    gemm_tiles<T, Eigen::RowMajor, Eigen::RowMajor>(a, b, c, shape, bias, activation);
  } else if (a_rows) {
    gemm_tiles<T, Eigen::RowMajor, Eigen::ColMajor>(a, b, c, shape, bias, activation);
  } else if (b_rows) {
    gemm_tiles<T, Eigen::ColMajor, Eigen::RowMajor>(a, b, c, shape, bias, activation);
  } else {
    gemm_tiles<T, Eigen::ColMajor, Eigen::ColMajor>(a, b, c, shape, bias, activation);
  }
}

template void gemm<float>(const float*, const float*, float*, const GemmShape&, const float*, Activation);
template void gemm<double>(const double*, const double*, double*, const GemmShape&, const double*, Activation);

}  // namespace ember::cpu
