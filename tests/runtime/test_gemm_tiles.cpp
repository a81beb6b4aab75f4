// How big CPU products are cut into library calls (plan_gemm_tiles, kernels/cpu/gemm.cpp): the
// largest tiles that give every core one, within 128 x 256 .. 512 x 512, and never a plan that
// depends on the thread setting. That the tiled products are right, and the same for any thread
// count, is test_linalg's "big products are tiled" case.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/gemm.h"

namespace test_gemm_tiles {

using ember::cpu::GemmTiles;
using ember::cpu::plan_gemm_tiles;

namespace {

int64_t tile_count(int64_t m, int64_t n, GemmTiles tiles) {
  return ((m + tiles.rows - 1) / tiles.rows) * ((n + tiles.cols - 1) / tiles.cols);
}

void check_tiles(int64_t m, int64_t n, int cores, int64_t rows, int64_t cols) {
  INFO("m " << m << " n " << n << " cores " << cores);
  const GemmTiles tiles = plan_gemm_tiles(m, n, cores);
  CHECK(tiles.rows == rows);
  CHECK(tiles.cols == cols);
}

}  // namespace

TEST_CASE("the wide MLP's products: big tiles on a small machine, one tile per core on a big one") {
  // Forward and input-gradient products of batch 256 (x W^T: 256 x 1024).
  check_tiles(256, 1024, 2, 256, 256);
  check_tiles(256, 1024, 4, 256, 256);
  check_tiles(256, 1024, 16, 128, 256);  // 8 tiles: the smallest tile is the limit
  // Weight-gradient products (dZ^T h: 1024 x 1024 and 1024 x 784).
  check_tiles(1024, 1024, 1, 512, 512);
  check_tiles(1024, 1024, 16, 256, 256);
  check_tiles(1024, 1024, 64, 128, 256);
  check_tiles(1024, 784, 2, 512, 512);  // 2 x 2 tiles, the last column of tiles 272 wide
}

TEST_CASE("a product smaller than the smallest tile is one tile, and a ragged one is clipped, not padded") {
  check_tiles(100, 200, 8, 128, 256);
  check_tiles(300, 300, 2, 150, 256);  // test_linalg's tiled case: 2 x 2 ragged tiles
  check_tiles(4096, 4096, 2, 512, 512);
}

// That each plan is the largest such is pinned by the cases above.
TEST_CASE("every plan stays within the tile bounds and gives each core a tile where the bounds allow") {
  for (int64_t m : {1, 127, 128, 129, 256, 300, 511, 512, 513, 1000, 1024, 3000, 4096, 100000}) {
    for (int64_t n : {1, 255, 256, 257, 784, 1024, 1500, 4096, 50000}) {
      for (int cores : {1, 2, 3, 4, 8, 16, 64, 256}) {
        INFO("m " << m << " n " << n << " cores " << cores);
        const GemmTiles tiles = plan_gemm_tiles(m, n, cores);
        CHECK(tiles.rows >= 128);
        CHECK(tiles.rows <= 512);
        CHECK(tiles.cols >= 256);
        CHECK(tiles.cols <= 512);
        const int64_t wanted = std::max(4, cores);
        const int64_t most = tile_count(m, n, {128, 256});
        CHECK(tile_count(m, n, tiles) >= std::min(wanted, most));
      }
    }
  }
}

}  // namespace test_gemm_tiles
