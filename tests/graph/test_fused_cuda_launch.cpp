// The launch shapes the CUDA backend gives fused kernels (graph/fused_launch.h): which block axis
// splits an output's elements, how many threads, and when few long outputs are also split over
// blocks (pieces) as eager's reductions are. The emulation tests run kernels with these launches.
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>

#include "fused_case_graphs.h"
#include "graph/fused_launch.h"

namespace test_fused_cuda_launch {

using namespace ember;
using namespace ember::graph;
using namespace ember::graph_test;

namespace {

// A launch as "grid <x> x <pieces>, block <x> x <y>", so one CHECK shows all of it.
std::string launch_text(const FusedCudaLaunch& launch) {
  return fmt::format("grid {} x {}, block {} x {}", launch.grid, launch.pieces, launch.block_x, launch.block_y);
}

}  // namespace

TEST_CASE("fused CUDA launch: reduced elements split over threads along the axis that reads adjacent memory") {
  GraphBuilder bias = bias_gradient_with_export(kFloat32);
  const FusedGroup leading = fuse_one("leading", bias).group;  // [33, 20] -> [20]
  const FusedCudaLaunch across = fused_cuda_launch(leading);
  CHECK(across.block_x == 32);  // adjacent outputs
  CHECK(across.block_y == 32);  // 33 rows: split 32 ways
  CHECK(across.grid == 1);
  GraphBuilder rows = reduction({5, 50}, Dims{1}, false);
  const FusedGroup trailing = fuse_one("trailing", rows).group;  // [5, 50] -> [5]
  const FusedCudaLaunch along = fused_cuda_launch(trailing);
  CHECK(along.block_x == 32);  // adjacent elements of one row
  CHECK(along.block_y == 8);
  CHECK(along.grid == 1);
  GraphBuilder chain = broadcast_pointwise();
  const FusedGroup pointwise = fuse_one("pointwise", chain).group;
  CHECK(fused_cuda_launch(pointwise).block_x == 256);
  CHECK(fused_cuda_launch(pointwise).grid == 1);
  GraphBuilder empty_rows = reduction({0, 3}, Dims{0}, false);
  CHECK(fused_cuda_launch(fuse_one("empty", empty_rows).group).grid == 1);  // 3 zero sums
  // The argument block: pointers to output 0, 2 inputs and 1 export; 2 x 2 strides; the piece
  // sums' pointer and count; the flag.
  CHECK(fused_cuda_argument_words(leading) == 4 + 4 + 2 + 1);
}

TEST_CASE("fused CUDA launch: few long outputs are split over blocks as eager's reductions are, short ones never") {
  GraphBuilder columns = reduction({33, 20}, Dims{0}, false);
  FusedGroup bias = fuse_one("columns", columns).group;
  // The large model's bias gradients: 4096 outputs of a 4096 batch. Unsplit they were 128 blocks
  // of 32 x 32; now 8 pieces of 512 rows: 1024 blocks of 32 x 8, as eager's column sums.
  bias.shape = Dims{4096, 4096};
  CHECK(launch_text(fused_cuda_launch(bias)) == "grid 128 x 8, block 32 x 8");
  CHECK(launch_text(finish_launch(bias)) == "grid 16 x 1, block 256 x 1");
  // The seed and wide models' (batch 32 and 256): one piece, the block as before.
  bias.shape = Dims{32, 1024};
  CHECK(launch_text(fused_cuda_launch(bias)) == "grid 32 x 1, block 32 x 32");
  bias.shape = Dims{256, 1024};
  CHECK(launch_text(fused_cuda_launch(bias)) == "grid 32 x 1, block 32 x 32");
  // A whole-tensor mean of 16 M elements: one output, so one row of 256 threads per block, and
  // eager's 1024 blocks.
  GraphBuilder whole = reduction({7, 9}, Dims{}, true);
  FusedGroup mean = fuse_one("whole", whole).group;
  mean.shape = Dims{4096, 4096};
  CHECK(launch_text(fused_cuda_launch(mean)) == "grid 1 x 1024, block 256 x 1");
  // Rows of 4096 or fewer elements are never split: 2 outputs get 128 threads each.
  GraphBuilder rows = reduction({2, 4096}, Dims{1}, false);
  CHECK(launch_text(fused_cuda_launch(fuse_one("rows", rows).group)) == "grid 1 x 1, block 128 x 2");
}

}  // namespace test_fused_cuda_launch
