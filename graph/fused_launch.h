// What a fused node's kernel needs at run time on either target: the operands of one call
// (pointers, each input's element strides over the iteration shape), and for CUDA the kernel's
// argument block and launch shape. The argument layout here and the struct that
// graph/codegen_emit_cuda.cpp emits must agree: the emitted struct static_asserts its size
// (fused_cuda_argument_words), and tests/graph/test_fused_cuda_emulation.cpp runs the emitted
// kernels on the CPU with exactly these arguments. Nothing here needs the CUDA toolkit.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/fusion.h"

namespace ember::graph {

struct FusedOperands {
  std::vector<char*> data;        // output 0, the inputs, then the exports
  // Element strides over the iteration shape, rank per operand: output 0's (0 on reduced dims),
  // then each input's (0 on broadcast dims). The CPU entry takes all; CUDA takes the inputs'.
  std::vector<int64_t> strides;
  bool contiguous = true;         // every input is flat over the iteration shape
};

// The operands of a call of `group`'s fused node, whose outputs are allocated: output 0 and the
// exports are fresh and contiguous (the generated code indexes them by element number). Written
// into `operands`, whose vectors keep their capacity: the fused kernels reuse one per thread, so
// a launch allocates nothing for its operands.
void fill_fused_operands(const FusedGroup& group, const OpCall& call, TensorList& outputs, FusedOperands& operands);

// Where a reduction split over blocks (FusedCudaLaunch::pieces > 1) leaves each piece's sum of
// each output before the finishing kernel adds them: pieces x outputs doubles, on the device.
struct FusedPieceSums {
  double* sums = nullptr;
  int64_t pieces = 1;
};

// The CUDA kernel's one by-value parameter, as 8-byte words: the data pointers, then the input
// strides (at least one word, so an input-less rank-0 group still has the array), the shape when
// the group has dynamic dims, for a reduction the piece sums' pointer and count, then 1 or 0 for
// `contiguous`. Written into `words` (cleared first; its capacity is kept, as with
// fill_fused_operands).
void fill_fused_cuda_arguments(const FusedGroup& group, const FusedOperands& operands, FusedPieceSums pieces,
                               std::vector<uint64_t>& words);
int64_t fused_cuda_stride_words(const FusedGroup& group);
int64_t fused_cuda_argument_words(const FusedGroup& group);

// How many elements the root writes (`outputs`) and how many are reduced into each (`count`, 1
// without a reduction).
struct FusedExtent {
  int64_t outputs = 1;
  int64_t count = 1;
  bool inner_reduced = false;  // the last dim is reduced: one output's elements are adjacent
};
FusedExtent fused_extent(const FusedGroup& group);

// The launch of a group's kernel. Pointwise: 1-D blocks of 256 threads, grid-stride. Reduction:
// 2-D blocks, one axis across outputs and the other splitting each output's reduced elements
// (x is whichever axis walks adjacent memory, so warps read coalesced); the partial sums meet in
// shared memory in a fixed order, so results do not depend on timing. grid 0: nothing to launch.
//
// Few outputs of many elements each (a bias gradient over a 4096 batch: 128 blocks) would leave
// most of a GPU idle, so their elements are also cut into `pieces` along the reduced extent, one
// row of blocks per piece (grid y): each block leaves its piece's sums in FusedPieceSums, and the
// group's `<name>_finish` kernel (finish_launch) adds the pieces in order, also a fixed order.
// That is how eager's reductions spread (kernels/cuda/reduce_kernels.cuh), with their block and
// piece sizes.
struct FusedCudaLaunch {
  unsigned grid = 0;  // blocks along x (across outputs)
  unsigned block_x = 1;
  unsigned block_y = 1;
  unsigned pieces = 1;  // blocks along y, each reducing one piece of every output's elements
};
FusedCudaLaunch fused_cuda_launch(const FusedGroup& group);

// The finishing kernel's launch when `pieces` > 1: 1-D blocks of 256 threads, one per output.
FusedCudaLaunch finish_launch(const FusedGroup& group);

// The most threads a reduction block has (the emitted shared-memory array's size).
constexpr int kFusedCudaMaxBlock = 1024;

}  // namespace ember::graph
