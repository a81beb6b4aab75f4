// The GEMM behind matmul, mm, bmm and linear: small products (use_small_gemm) go to the
// register-blocked small_gemm, the rest to the BLAS library one tile at a time (gemm_library.h:
// OpenBLAS, or Eigen without it). The libraries' own threads stay off: their blocking depends on
// the thread count, which would change float results with set_num_threads. Instead big products
// are cut into tiles (chosen from the shape and the machine's core count, never the thread
// setting) that run in parallel, each a single-threaded library product.
#include "kernels/cpu/gemm.h"

#include <omp.h>

#include <algorithm>

#include "kernels/cpu/gemm_library.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/functors.h"
#include "runtime/parallel.h"

namespace ember::cpu {

namespace {

// Tile sides: a tile starts kLargestTile square (clipped to the product) and is halved, its longer
// side first (rows on a tie), but never below kSmallestTileRows x kSmallestTileCols.
constexpr int64_t kLargestTile = 512;
constexpr int64_t kSmallestTileRows = 128;
constexpr int64_t kSmallestTileCols = 256;
// Big products get at least this many tiles, or one per core where there are more cores.
constexpr int64_t kLeastTiles = 4;
// A product of at least this many multiply-adds is tiled (smaller ones are one library call).
constexpr int64_t kTileWork = int64_t{1} << 23;
// Below this many multiply-adds in total, waking threads costs more than it saves.
constexpr int64_t kParallelWork = int64_t{1} << 18;

bool is_row_major(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return (col_stride == 1 || cols <= 1) && (rows <= 1 || row_stride >= cols);
}
bool is_col_major(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return (row_stride == 1 || rows <= 1) && (cols <= 1 || col_stride >= rows);
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

// The bias goes in first and the product accumulates onto it (beta = 1), so x W^T + b is one
// pass over C; without a bias the library writes C (beta = 0).
template <typename T>
void library_tile(StridedMatrix<T> a, StridedMatrix<T> b, T* c, int64_t c_row_stride, int64_t rows, int64_t cols,
                  int64_t k, const T* bias) {
  if (bias != nullptr) {
    for (int64_t row = 0; row < rows; ++row) std::copy(bias, bias + cols, c + row * c_row_stride);
  }
  if (k > 0) {
    tile_product(a, b, c, c_row_stride, rows, cols, k, bias != nullptr);
  } else if (bias == nullptr) {
    for (int64_t row = 0; row < rows; ++row) std::fill(c + row * c_row_stride, c + row * c_row_stride + cols, T{0});
  }
}

int64_t ceil_div(int64_t value, int64_t divisor) { return (value + divisor - 1) / divisor; }

}  // namespace

GemmTiles plan_gemm_tiles(int64_t m, int64_t n, int cores) {
  // Each library call copies its tile's rows x k and k x cols operand panels into packed form, so
  // the copies per multiply-add fall as 1/rows + 1/cols: the biggest tiles that still give every
  // core one. (128 x 256 tiles everywhere cost the wide MLP's step 12-15%, docs/PERFORMANCE.md.)
  const int64_t wanted = std::max<int64_t>(kLeastTiles, cores);
  GemmTiles tiles{std::min(kLargestTile, std::max(kSmallestTileRows, m)),
                  std::min(kLargestTile, std::max(kSmallestTileCols, n))};
  const auto count = [&] { return ceil_div(m, tiles.rows) * ceil_div(n, tiles.cols); };
  while (count() < wanted && (tiles.rows > kSmallestTileRows || tiles.cols > kSmallestTileCols)) {
    const bool rows_left = tiles.rows > kSmallestTileRows, cols_left = tiles.cols > kSmallestTileCols;
    if (cols_left && (tiles.cols > tiles.rows || !rows_left)) {
      tiles.cols = std::max(kSmallestTileCols, tiles.cols / 2);
    } else {
      tiles.rows = std::max(kSmallestTileRows, tiles.rows / 2);
    }
  }
  return tiles;
}

BatchOffsets batch_offsets(const GemmShape& shape, int64_t batch) {
  BatchOffsets offsets;
  for (int64_t d = shape.batch_sizes.size() - 1, rest = batch; d >= 0; --d) {
    const int64_t index = rest % shape.batch_sizes[d];
    rest /= shape.batch_sizes[d];
    offsets.a += index * shape.a_batch_strides[d];
    offsets.b += index * shape.b_batch_strides[d];
  }
  return offsets;
}

bool gemm_mappable(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return is_row_major(rows, cols, row_stride, col_stride) || is_col_major(rows, cols, row_stride, col_stride);
}

template <typename T>
void gemm(const T* a, const T* b, T* c, const GemmShape& shape, const T* bias, Activation activation) {
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const int64_t batches = shape.batch_sizes.product();
  const bool small = use_small_gemm(m, n, k);
  const bool tiled = !small && m * n * k >= kTileWork;
  // The core count, not get_num_threads(): set_num_threads must never change a result.
  static const int cores = omp_get_num_procs();
  const GemmTiles plan =
      tiled ? plan_gemm_tiles(m, n, cores) : GemmTiles{std::max<int64_t>(m, 1), std::max<int64_t>(n, 1)};
  const int64_t tile_rows = plan.rows, tile_cols = plan.cols;
  const int64_t row_tiles = ceil_div(m, tile_rows);
  const int64_t col_tiles = ceil_div(n, tile_cols);
  const int64_t tiles = row_tiles * col_tiles;
  const int64_t tasks = batches * tiles;
  const bool parallel = tasks > 1 && batches * m * n * k >= kParallelWork && get_num_threads() > 1;

  parallel_for(tasks, parallel, [&](int64_t task) {
    const int64_t batch = task / tiles;
    const int64_t first_row = (task % tiles) / col_tiles * tile_rows;
    const int64_t first_col = (task % tiles) % col_tiles * tile_cols;
    const int64_t rows = std::min(tile_rows, m - first_row);
    const int64_t cols = std::min(tile_cols, n - first_col);
    const auto [a_offset, b_offset] = batch_offsets(shape, batch);
    const StridedMatrix<T> tile_a{a + a_offset + first_row * shape.a_row_stride, shape.a_row_stride,
                                  shape.a_col_stride};
    const StridedMatrix<T> tile_b{b + b_offset + first_col * shape.b_col_stride, shape.b_row_stride,
                                  shape.b_col_stride};
    T* tile_c = c + batch * m * n + first_row * n + first_col;
    const T* tile_bias = bias == nullptr ? nullptr : bias + first_col;
    if (small) {
      small_gemm<T>(tile_a, tile_b, tile_c, n, rows, cols, k, tile_bias);
    } else {
      library_tile<T>(tile_a, tile_b, tile_c, n, rows, cols, k, tile_bias);
    }
    apply_activation(tile_c, rows, cols, n, activation);
  });
}

template void gemm<float>(const float*, const float*, float*, const GemmShape&, const float*, Activation);
template void gemm<double>(const double*, const double*, double*, const GemmShape&, const double*, Activation);

}  // namespace ember::cpu
